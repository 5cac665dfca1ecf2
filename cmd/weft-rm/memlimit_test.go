package main

import (
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/bytedance/gopkg/util/gctuner"
)

func TestMemoryLimit(t *testing.T) {
	limit := func(n int64, err error) func() (int64, error) { return func() (int64, error) { return n, err } }
	gib := limit(1<<30, nil)
	cases := []struct {
		flag    string
		read    func() (int64, error)
		want    int64
		wantErr bool
	}{
		{"", gib, 0, false},
		{"400Mi", gib, 400 << 20, false},
		{"1073741824", nil, 1 << 30, false},
		{"90%", gib, 1 << 30 * 9 / 10, false},
		{"50%", limit(0, nil), 0, false}, // no container limit: none
		{"90%", limit(0, errors.New("unreadable")), 0, true},
		{"0%", gib, 0, true},
		{"150%", gib, 0, true},
		{"-1Gi", gib, 0, true},
		{"lots", gib, 0, true},
	}
	for _, c := range cases {
		got, err := memoryLimit(c.flag, c.read)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("memoryLimit(%q) = %d, %v; want %d, error %v", c.flag, got, err, c.want, c.wantErr)
		}
	}
}

// --gc-percent when given, else the GOGC environment variable (left to
// the runtime), else weft-rm's default.
func TestGCPercent(t *testing.T) {
	cases := []struct {
		name     string
		flag     int
		given    bool
		env      string
		want     int
		wantSets bool
	}{
		{"default", defaultGCPercent, false, "", defaultGCPercent, true},
		{"GOGC set", defaultGCPercent, false, "200", 0, false},
		{"flag given", 100, true, "", 100, true},
		{"flag given wins over GOGC", -1, true, "200", -1, true},
	}
	for _, c := range cases {
		got, sets := gcPercent(c.flag, c.given, c.env)
		if got != c.want || sets != c.wantSets {
			t.Errorf("%s: gcPercent = %d, %v; want %d, %v", c.name, got, sets, c.want, c.wantSets)
		}
	}
}

func TestHeapFloor(t *testing.T) {
	cases := []struct {
		flag    string
		want    uint64
		wantErr bool
	}{
		{"", 0, false},
		{"0", 0, false},
		{"256Mi", 256 << 20, false},
		{"1Gi", 1 << 30, false},
		{"-1Mi", 0, true},
		{"big", 0, true},
	}
	for _, c := range cases {
		got, err := heapFloor(c.flag)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("heapFloor(%q) = %d, %v; want %d, error %v", c.flag, got, err, c.want, c.wantErr)
		}
	}
}

func TestFloorUnderTheMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		floor uint64
		limit int64
		want  uint64
	}{{256 << 20, 0, 256 << 20}, {256 << 20, 1 << 30, 256 << 20}, {256 << 20, 400 << 20, 200 << 20}, {0, 400 << 20, 0}} {
		if got := floorUnder(c.floor, c.limit); got != c.want {
			t.Errorf("floorUnder(%d, %d) = %d, want %d", c.floor, c.limit, got, c.want)
		}
	}
}

// Under the floor, the collection after setGC leaves GOGC raised above
// --gc-percent (a test's heap is far under 256 MiB: to the cap); with no
// floor it stays at --gc-percent.
func TestSetGCRaisesGOGCUnderTheFloor(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: setGC leaves the runtime to it only when --gc-percent is not given; this test gives it")
	}
	defer func() {
		gctuner.Tuning(0)
		debug.SetGCPercent(100)
	}()
	current := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }

	setGC(50, true, 0)
	runtime.GC()
	if got := current(); got != 50 {
		t.Fatalf("no floor: GOGC %d after a collection, want 50", got)
	}
	setGC(50, true, 256<<20)
	deadline := time.Now().Add(5 * time.Second)
	for current() != maxTunedGCPercent && time.Now().Before(deadline) {
		runtime.GC() // the tuner runs from a finalizer, after a collection
		time.Sleep(10 * time.Millisecond)
	}
	if got := current(); got != maxTunedGCPercent {
		t.Fatalf("under the floor: GOGC %d, want %d", got, maxTunedGCPercent)
	}
}
