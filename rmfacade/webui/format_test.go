package webui

import "testing"

func TestFormat(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"duration zero", duration(0), "0s"},
		{"duration sub-second", duration(999), "0s"},
		{"duration seconds", duration(5000), "5s"},
		{"duration minutes", duration(83000), "1m 23s"},
		{"duration hours", duration(3600000), "1h 0m 0s"},
		{"duration days", duration((2*86400 + 3*3600 + 4*60 + 5) * 1000), "2d 3h 4m 5s"},
		{"duration negative", duration(-1), "N/A"},
		{"when unset", when(0), "N/A"},
		{"when", when(1700000000000), "2023-11-14 22:13:20 UTC"},
		{"mb", mb(int64(512)), "512 MB"},
		{"mb GB", mb(int64(8192)), "8 GB"},
		{"mb fraction", mb(int64(1536)), "1.5 GB"},
		{"mb TB", mb(int64(2 << 20)), "2 TB"},
		{"mb int32", mb(int32(2048)), "2 GB"},
		{"mb finished", mb(int64(-1)), "N/A"},
		{"na", na(int32(3)), "3"},
		{"na finished", na(int64(-1)), "N/A"},
		{"pct clamps", pct(130), "100.0"},
		{"pct negative", pct(-2), "0.0"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
