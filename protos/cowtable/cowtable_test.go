package cowtable

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"unsafe"
)

// row is a test object: an id, a required key (app), an optional one
// (node) and several (tags).
type row struct {
	id, app, node string
	tags          []string
}

const (
	byApp = iota
	byNode
	byTag
)

func newRows() Table[row] {
	return New("row", func(r *row) string { return r.id },
		Index[row]{Name: "app", Key: func(r *row) string { return r.app }},
		Index[row]{Name: "node", Key: func(r *row) string { return r.node }, AllowMissing: true},
		Index[row]{Name: "tag", Keys: func(r *row) []string { return r.tags }, AllowMissing: true})
}

func ids(objs []*row) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.id)
	}
	return out
}

// scan collects an Ascend or AscendBy scan's ids, stopping after limit
// objects (0: no limit).
func scan(limit int, ascend func(func(*row) bool)) []string {
	out := []string{}
	ascend(func(r *row) bool {
		out = append(out, r.id)
		return limit == 0 || len(out) < limit
	})
	return out
}

// TestTable checks a table's rows and secondary indexes through inserts,
// replacements that move an object between index keys, and deletes.
func TestTable(t *testing.T) {
	type op struct {
		del     bool
		r       row
		wantErr error // errors.Is target; errAny for any error
		wantAll []string
		wantBy  map[int]map[string][]string
		wantGet string // the node Get(r.id) then has
	}
	errAny := errors.New("any")
	cases := []struct {
		name string
		ops  []op
	}{
		{"inserts in id order, per key", []op{
			{r: row{id: "b", app: "x", node: "n1"}},
			{r: row{id: "a", app: "x", node: "n2"}},
			{r: row{id: "c", app: "y", node: "n1"}, wantAll: []string{"a", "b", "c"},
				wantBy: map[int]map[string][]string{
					byApp:  {"x": {"a", "b"}, "y": {"c"}, "": {}, "xy": {}},
					byNode: {"n1": {"b", "c"}, "n2": {"a"}}}},
		}},
		{"a replacement moves the object between keys", []op{
			{r: row{id: "a", app: "x", node: "n1"}},
			{r: row{id: "a", app: "x", node: "n2"}, wantAll: []string{"a"},
				wantBy: map[int]map[string][]string{byNode: {"n1": {}, "n2": {"a"}}}, wantGet: "n2"},
		}},
		{"delete takes every index entry", []op{
			{r: row{id: "a", app: "x", node: "n1", tags: []string{"t"}}},
			{r: row{id: "b", app: "x", node: "n1", tags: []string{"t"}}},
			{del: true, r: row{id: "a"}, wantAll: []string{"b"},
				wantBy: map[int]map[string][]string{byApp: {"x": {"b"}}, byNode: {"n1": {"b"}}, byTag: {"t": {"b"}}}},
		}},
		{"deleting a missing object", []op{{del: true, r: row{id: "a"}, wantErr: ErrNotFound}}},
		{"an object without id or required key is refused", []op{
			{r: row{id: "", app: "x"}, wantErr: errAny},
			{r: row{id: "a", app: ""}, wantErr: errAny, wantAll: []string{}},
		}},
		{"a refused replacement leaves the old object", []op{
			{r: row{id: "a", app: "x", node: "n1"}},
			{r: row{id: "a", app: "", node: "n2"}, wantErr: errAny, wantGet: "n1",
				wantBy: map[int]map[string][]string{byApp: {"x": {"a"}}, byNode: {"n1": {"a"}, "n2": {}}}},
		}},
		{"an empty key leaves the object out of an AllowMissing index", []op{
			{r: row{id: "a", app: "x", node: "n1"}},
			{r: row{id: "b", app: "x"}},
			{r: row{id: "a", app: "x"}, wantAll: []string{"a", "b"},
				wantBy: map[int]map[string][]string{byNode: {"": {}, "n1": {}}, byApp: {"x": {"a", "b"}}}},
		}},
		{"a multi-key object is under each distinct key", []op{
			{r: row{id: "a", app: "x", tags: []string{"spark", "", "etl", "spark"}}},
			{r: row{id: "b", app: "x", tags: []string{"etl"}},
				wantBy: map[int]map[string][]string{byTag: {"spark": {"a"}, "etl": {"a", "b"}, "": {}}}},
			{r: row{id: "a", app: "x", tags: []string{"etl", "hive"}},
				wantBy: map[int]map[string][]string{byTag: {"spark": {}, "etl": {"a", "b"}, "hive": {"a"}}}},
			{r: row{id: "a", app: "x"},
				wantBy: map[int]map[string][]string{byTag: {"etl": {"b"}, "hive": {}}}},
		}},
		{"keys that are prefixes of others stay apart", []op{
			{r: row{id: "a", app: "app-1"}},
			{r: row{id: "b", app: "app-10"}},
			{r: row{id: "c", app: "app-"},
				wantBy: map[int]map[string][]string{byApp: {"app-1": {"a"}, "app-10": {"b"}, "app-": {"c"}}}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := newRows()
			for i, o := range c.ops {
				r := o.r
				var err error
				if o.del {
					err = tb.Delete(r.id)
				} else {
					err = tb.Insert(&r)
				}
				switch {
				case o.wantErr == nil && err != nil:
					t.Fatalf("op %d: %v", i, err)
				case o.wantErr == errAny && err == nil, o.wantErr != nil && o.wantErr != errAny && !errors.Is(err, o.wantErr):
					t.Fatalf("op %d: error %v, want %v", i, err, o.wantErr)
				}
				if o.wantAll != nil {
					if got := ids(tb.All()); !slices.Equal(got, o.wantAll) || tb.Len() != len(o.wantAll) {
						t.Errorf("op %d: all %v (len %d), want %v", i, got, tb.Len(), o.wantAll)
					}
				}
				for ix, keys := range o.wantBy {
					for key, want := range keys {
						if got := ids(tb.By(ix, key)); !slices.Equal(got, want) {
							t.Errorf("op %d: by %s %q %v, want %v", i, tb.index[ix].Name, key, got, want)
						}
					}
				}
				if o.wantGet != "" {
					if got := tb.Get(r.id); got == nil || got.node != o.wantGet {
						t.Errorf("op %d: Get(%s) = %+v, want node %s", i, r.id, got, o.wantGet)
					}
				}
			}
		})
	}
}

// TestRequiredMultiKey checks that an index of several keys that does not
// allow them missing refuses an object with none (or only empty ones).
func TestRequiredMultiKey(t *testing.T) {
	tb := New("row", func(r *row) string { return r.id },
		Index[row]{Name: "tag", Keys: func(r *row) []string { return r.tags }})
	for _, tags := range [][]string{nil, {""}} {
		if err := tb.Insert(&row{id: "a", tags: tags}); err == nil {
			t.Errorf("tags %q: inserted", tags)
		}
	}
	if err := tb.Insert(&row{id: "a", tags: []string{"", "t"}}); err != nil {
		t.Errorf("tags [\"\" t]: %v", err)
	}
}

// TestScans checks prefix and ordered scans of the ids and of an index,
// and that a scan stops when its function returns false.
func TestScans(t *testing.T) {
	tb := newRows()
	for _, r := range []row{
		{id: "app_1/c_2", app: "0003", node: "n1"},
		{id: "app_1/c_1", app: "0001", node: "n2"},
		{id: "app_10/c_1", app: "0002"},
		{id: "app_2/c_1", app: "0001", node: "n1", tags: []string{"b", "a"}},
	} {
		if err := tb.Insert(&r); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		limit int
		scan  func(func(*row) bool)
		want  []string
	}{
		{"ids by prefix", 0, func(fn func(*row) bool) { tb.Ascend("app_1/", fn) }, []string{"app_1/c_1", "app_1/c_2"}},
		{"ids by a shorter prefix", 0, func(fn func(*row) bool) { tb.Ascend("app_1", fn) },
			[]string{"app_1/c_1", "app_1/c_2", "app_10/c_1"}},
		{"ids, no match", 0, func(fn func(*row) bool) { tb.Ascend("app_3", fn) }, []string{}},
		{"every id, stopped after two", 2, func(fn func(*row) bool) { tb.Ascend("", fn) }, []string{"app_1/c_1", "app_1/c_2"}},
		{"an index in key then id order", 0, func(fn func(*row) bool) { tb.AscendBy(byApp, "", fn) },
			[]string{"app_1/c_1", "app_2/c_1", "app_10/c_1", "app_1/c_2"}},
		{"an index's front", 1, func(fn func(*row) bool) { tb.AscendBy(byApp, "", fn) }, []string{"app_1/c_1"}},
		{"an index by prefix", 0, func(fn func(*row) bool) { tb.AscendBy(byApp, "000", fn) },
			[]string{"app_1/c_1", "app_2/c_1", "app_10/c_1", "app_1/c_2"}},
		{"an index by a key as prefix", 0, func(fn func(*row) bool) { tb.AscendBy(byApp, "0001", fn) },
			[]string{"app_1/c_1", "app_2/c_1"}},
		{"an AllowMissing index holds only keyed objects", 0, func(fn func(*row) bool) { tb.AscendBy(byNode, "", fn) },
			[]string{"app_1/c_2", "app_2/c_1", "app_1/c_1"}},
		{"a multi-key object once per key", 0, func(fn func(*row) bool) { tb.AscendBy(byTag, "", fn) },
			[]string{"app_2/c_1", "app_2/c_1"}},
	}
	for _, c := range cases {
		if got := scan(c.limit, c.scan); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestClone checks that writes to a clone leave the table it was cloned
// from as it was, through several clones of clones.
func TestClone(t *testing.T) {
	base := newRows()
	for _, id := range []string{"a", "b", "c"} {
		if err := base.Insert(&row{id: id, app: "x", node: "n1", tags: []string{"t"}}); err != nil {
			t.Fatal(err)
		}
	}
	c1 := base.Clone()
	if err := c1.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if err := c1.Insert(&row{id: "b", app: "y", node: "n2"}); err != nil {
		t.Fatal(err)
	}
	c2 := c1.Clone()
	if err := c2.Insert(&row{id: "d", app: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                      string
		tb                        Table[row]
		all, byX, byN1, byN2, byT []string
	}{
		{"base", base, []string{"a", "b", "c"}, []string{"a", "b", "c"}, []string{"a", "b", "c"}, []string{}, []string{"a", "b", "c"}},
		{"clone", c1, []string{"b", "c"}, []string{"c"}, []string{"c"}, []string{"b"}, []string{"c"}},
		{"clone of clone", c2, []string{"b", "c", "d"}, []string{"c", "d"}, []string{"c"}, []string{"b"}, []string{"c"}},
	} {
		got := [][]string{ids(c.tb.All()), ids(c.tb.By(byApp, "x")), ids(c.tb.By(byNode, "n1")), ids(c.tb.By(byNode, "n2")), ids(c.tb.By(byTag, "t"))}
		want := [][]string{c.all, c.byX, c.byN1, c.byN2, c.byT}
		for i := range got {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("%s: view %d %v, want %v", c.name, i, got[i], want[i])
			}
		}
	}
}

// TestStoredID: a replaced object keeps the id string it was first stored
// under, which StoredID hands out, so that holders of many ids share the
// table's copies.
func TestStoredID(t *testing.T) {
	tb := newRows()
	first := string([]byte("r1")) // a copy of its own, not a constant
	if err := tb.Insert(&row{id: first, app: "a"}); err != nil {
		t.Fatal(err)
	}
	again := string([]byte("r1"))
	if err := tb.Insert(&row{id: again, app: "b"}); err != nil {
		t.Fatal(err)
	}
	lookup := string([]byte("r1"))
	if got := tb.StoredID(lookup); unsafe.StringData(got) != unsafe.StringData(first) {
		t.Error("StoredID after a replacement is not the id first stored")
	}
	if got := tb.StoredID("r2"); got != "r2" {
		t.Errorf("StoredID of an absent id = %q", got)
	}
	if got := ids(tb.By(byApp, "b")); !slices.Equal(got, []string{"r1"}) {
		t.Errorf("by app b: %v", got)
	}
}

// TestBatches checks that InsertNew and DeleteHeld leave a table as the
// same Inserts and Deletes one by one do, in batches written on one
// goroutine and on a goroutine per tree (batchParallel), on a clone whose
// table stays as it was; and what each refuses.
func TestBatches(t *testing.T) {
	for _, n := range []int{batchParallel / 8, batchParallel * 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			one, base := newRows(), newRows()
			for i := range n / 2 { // objects both hold before the batches
				r := &row{id: fmt.Sprintf("old-%04d", i), app: fmt.Sprintf("a%d", i%7), node: fmt.Sprintf("n%d", i%5)}
				if err := one.Insert(r); err != nil {
					t.Fatal(err)
				}
				if err := base.Insert(r); err != nil {
					t.Fatal(err)
				}
			}
			var fresh, held []*row
			for i := range n {
				r := &row{id: fmt.Sprintf("new-%04d", n-i), app: fmt.Sprintf("a%d", i%7), tags: []string{"t", fmt.Sprint(i % 3)}}
				if i%2 == 0 {
					r.node = fmt.Sprintf("n%d", i%5)
				}
				fresh = append(fresh, r)
				if err := one.Insert(r); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < n/2; i += 3 {
				held = append(held, base.Get(fmt.Sprintf("old-%04d", i)))
			}
			held = append(held, fresh[1], fresh[len(fresh)-1])
			for _, r := range held {
				if err := one.Delete(r.id); err != nil {
					t.Fatal(err)
				}
			}

			batch := base.Clone()
			if err := batch.InsertNew(fresh); err != nil {
				t.Fatal(err)
			}
			if err := batch.DeleteHeld(held); err != nil {
				t.Fatal(err)
			}
			if got, want := dump(batch), dump(one); !slices.Equal(got, want) {
				t.Errorf("batches left\n%v\none by one\n%v", got, want)
			}
			if base.Len() != n/2 || len(base.By(byTag, "t")) != 0 {
				t.Errorf("the cloned table changed: %d objects, %d tagged", base.Len(), len(base.By(byTag, "t")))
			}

			refused := []struct {
				name  string
				write func(Table[row]) error
				batch bool // found while writing (ErrBatch), else before
			}{
				{"an id held already", func(tb Table[row]) error {
					return tb.InsertNew(append(slices.Clone(fresh[:n-1]), &row{id: "old-0001", app: "x"}))
				}, true},
				{"an id twice", func(tb Table[row]) error {
					return tb.InsertNew(append(slices.Clone(fresh[:n-1]), &row{id: fresh[0].id, app: "x"}))
				}, true},
				{"an object without a required key", func(tb Table[row]) error {
					return tb.InsertNew(append(slices.Clone(fresh[:n-1]), &row{id: "x"}))
				}, false},
				{"an id not held", func(tb Table[row]) error {
					return tb.DeleteHeld([]*row{base.Get("old-0001"), {id: "missing", app: "x"}})
				}, true},
				{"an object not the one held", func(tb Table[row]) error {
					c := *base.Get("old-0001")
					return tb.DeleteHeld([]*row{base.Get("old-0002"), &c})
				}, true},
			}
			for _, c := range refused {
				tb := base.Clone()
				err := c.write(tb)
				switch {
				case err == nil:
					t.Errorf("%s: written", c.name)
				case errors.Is(err, ErrBatch) != c.batch:
					t.Errorf("%s: error %v, ErrBatch %v", c.name, err, c.batch)
				case !c.batch && !slices.Equal(dump(tb), dump(base)):
					t.Errorf("%s: refused, but the table changed", c.name)
				}
			}
		})
	}
}

// dump lists every object of a table of rows and every index entry, in
// order.
func dump(tb Table[row]) []string {
	out := scan(0, func(fn func(*row) bool) { tb.Ascend("", fn) })
	for ix := range tb.index {
		out = append(out, fmt.Sprintf("index %d:", ix))
		tb.by[ix].Ascend(func(e entry[row]) bool {
			out = append(out, e.key+"/"+e.id+"="+e.obj.id)
			return true
		})
	}
	return out
}
