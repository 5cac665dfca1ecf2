package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadWindow(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		samples []time.Duration
		sampErr error
		cpu     time.Duration
		json    string
		wantErr string
	}{
		{name: "window priced alone", out: "WINDOW start\nWINDOW end\n{\"calls\":10}\n",
			samples: []time.Duration{3 * time.Second, 5 * time.Second}, cpu: 2 * time.Second, json: `{"calls":10}`},
		{name: "lines around the markers are ignored", out: "log line\nWINDOW start\nnoise\nWINDOW end\n{\"calls\":1}\n",
			samples: []time.Duration{time.Second, 1500 * time.Millisecond}, cpu: 500 * time.Millisecond, json: `{"calls":1}`},
		{name: "result before the window closed", out: "WINDOW start\n{\"calls\":1}\n",
			samples: []time.Duration{time.Second}, wantErr: "ended before its window closed"},
		{name: "end before start", out: "WINDOW end\nWINDOW start\n", wantErr: "out of order"},
		{name: "start twice", out: "WINDOW start\nWINDOW start\n", samples: []time.Duration{0}, wantErr: "out of order"},
		{name: "no output", out: "", wantErr: "ended before"},
		{name: "server gone", out: "WINDOW start\n", sampErr: errors.New("no such process"), wantErr: "server CPU: no such process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := 0
			sample := func() (time.Duration, error) {
				if tt.sampErr != nil {
					return 0, tt.sampErr
				}
				if i >= len(tt.samples) {
					t.Fatalf("sampled %d times, want %d", i+1, len(tt.samples))
				}
				i++
				return tt.samples[i-1], nil
			}
			cpu, json, err := readWindow(strings.NewReader(tt.out), sample)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cpu != tt.cpu || json != tt.json || i != len(tt.samples) {
				t.Fatalf("got %v %q after %d samples, want %v %q after %d", cpu, json, i, tt.cpu, tt.json, len(tt.samples))
			}
		})
	}
}

func TestParseThreads(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "8", want: []int{8}},
		{in: "2,4, 8", want: []int{2, 4, 8}},
		{in: "0", wantErr: true},
		{in: "2,,4", wantErr: true},
		{in: "x", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseThreads(tt.in)
		if (err != nil) != tt.wantErr || !tt.wantErr && !slices.Equal(got, tt.want) {
			t.Errorf("parseThreads(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestResultPricesTheWindow(t *testing.T) {
	r := result{Calls: 20000, Seconds: 10, ServerCPU: 5 * time.Second}
	if got := r.CPUPerCall(); got != 250 {
		t.Errorf("CPUPerCall = %v µs, want 250", got)
	}
	if got := r.Cores(); got != 0.5 {
		t.Errorf("Cores = %v, want 0.5", got)
	}
}
