package procstat

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in      string
		want    []int
		wantErr string
	}{
		{in: "0-3,8-11\n", want: []int{0, 1, 2, 3, 8, 9, 10, 11}},
		{in: "2", want: []int{2}},
		{in: "0-1", want: []int{0, 1}},
		{in: "2-3,6", want: []int{2, 3, 6}},
		{in: "6,2-3,3", want: []int{2, 3, 6}}, // unsorted and repeated input
		{in: "", want: nil},
		{in: "\n", want: nil}, // an empty cpuset.cpus as the kernel prints it
		{in: "3-1", wantErr: "runs backwards"},
		{in: "0-7:2/4", wantErr: "not a CPU number"},
		{in: "1-", wantErr: "not a CPU number"},
		{in: ",1", wantErr: "not a CPU number"},
		{in: "-1", wantErr: "not a CPU number"},
		{in: "+1", wantErr: "not a CPU number"},
		{in: "a", wantErr: "not a CPU number"},
		{in: "0-99999999", wantErr: "not a CPU number"},
	}
	for _, c := range cases {
		got, err := ParseCPUList(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseCPUList(%q) = %v, %v; want error containing %q", c.in, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestFormatCPUList(t *testing.T) {
	cases := []struct {
		in   []int
		want string
	}{
		{in: nil, want: ""},
		{in: []int{5}, want: "5"},
		{in: []int{2, 3}, want: "2-3"}, // the kernel prints a run of two as a range
		{in: []int{6, 2, 3}, want: "2-3,6"},
		{in: []int{0, 1, 2, 3, 8, 9, 10, 11}, want: "0-3,8-11"},
		{in: []int{1, 1, 2, 5, 7, 8}, want: "1-2,5,7-8"},
	}
	for _, c := range cases {
		got := FormatCPUList(c.in)
		if got != c.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", c.in, got, c.want)
		}
		back, err := ParseCPUList(got)
		want := slices.Compact(slices.Sorted(slices.Values(c.in)))
		if err != nil || !slices.Equal(back, want) {
			t.Errorf("ParseCPUList(FormatCPUList(%v)) = %v, %v", c.in, back, err)
		}
	}
	in := []int{3, 1, 2}
	FormatCPUList(in)
	if !slices.Equal(in, []int{3, 1, 2}) {
		t.Errorf("FormatCPUList changed its argument to %v", in)
	}
}
