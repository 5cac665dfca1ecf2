package main

import (
	"errors"
	"testing"
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
