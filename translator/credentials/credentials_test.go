package credentials

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

// vlong encodes v as Hadoop's WritableUtils.writeVLong does, to build
// Writable-encoded fixtures.
func vlong(v int64) []byte {
	if v >= -112 && v <= 127 {
		return []byte{byte(v)}
	}
	prefix := int64(-112)
	if v < 0 {
		v, prefix = ^v, -120
	}
	var b []byte
	for t := v; t != 0; t >>= 8 {
		b = append([]byte{byte(t)}, b...)
	}
	return append([]byte{byte(prefix - int64(len(b)))}, b...)
}

func text(s string) []byte { return append(vlong(int64(len(s))), s...) }

func TestVLong(t *testing.T) {
	for _, v := range []int64{0, 1, 127, -112, 128, 300, 65536, -113, -1000, 1 << 40, -(1 << 40)} {
		got, err := readVLong(bufio.NewReader(bytes.NewReader(vlong(v))))
		if err != nil || got != v {
			t.Errorf("vlong %d: got %d, %v", v, got, err)
		}
	}
}

func TestReadWritable(t *testing.T) {
	id := bytes.Repeat([]byte{7}, 300) // a two-byte length
	var b bytes.Buffer
	b.WriteString("HDTS\x00")
	b.Write(vlong(1))
	b.Write(text("rm-dt"))
	b.Write(append(vlong(int64(len(id))), id...))
	b.Write(append(vlong(2), 1, 2))
	b.Write(text("RM_DELEGATION_TOKEN"))
	b.Write(text("127.0.0.1:8032"))
	b.Write(vlong(1))
	b.Write(text("secret"))
	b.Write(append(vlong(1), 9))
	c, err := Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	tok := c.Tokens["rm-dt"]
	if !bytes.Equal(tok.Identifier, id) || tok.Kind != "RM_DELEGATION_TOKEN" || tok.Service != "127.0.0.1:8032" || !bytes.Equal(c.Secrets["secret"], []byte{9}) {
		t.Fatalf("parsed %+v", c)
	}
	// Writing and reading back keeps everything.
	out, err := c.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out)
	if err != nil || !bytes.Equal(again.Tokens["rm-dt"].Identifier, id) || len(again.Secrets) != 1 {
		t.Fatalf("round trip: %+v, %v", again, err)
	}
	if out2, _ := again.Bytes(); !bytes.Equal(out, out2) {
		t.Fatal("output is not reproducible")
	}
}

func TestMalformed(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty magic":      []byte("HD"),
		"wrong magic":      []byte("HDFS\x00"),
		"unknown version":  []byte("HDTS\x07"),
		"truncated":        append([]byte("HDTS\x00"), 1, 5, 'a'),
		"huge count":       append([]byte("HDTS\x00"), vlong(1<<30)...),
		"negative length":  append(append([]byte("HDTS\x00"), 1), vlong(-5)...),
		"bad protobuf len": []byte("HDTS\x01\xff\xff\xff\xff\x0f"),
	} {
		if _, err := Parse(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: got %v, want ErrFormat", name, err)
		}
	}
	if c, err := Parse(nil); err != nil || len(c.Tokens) != 0 {
		t.Errorf("empty input: %v %v", c, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("HDTS\x00\x01\x05rm-dt\x01\x01\x01\x02\x04kind\x03svc\x00"))
	f.Add([]byte("HDTS\x01\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err == nil {
			if _, err := c.Bytes(); err != nil {
				t.Fatalf("parsed credentials do not write: %v", err)
			}
		}
	})
}
