package amrm

import (
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
)

// What an AM reports of its progress in each allocate is its attempt's
// progress until the next report, read as YARN's
// ApplicationMasterService reads it: NaN and negatives are 0, anything
// above 1 is 1; an allocate without one leaves the last.
func TestProgressIsTheAMsLastReport(t *testing.T) {
	f := start(t)
	attempt, c := f.registeredAM(t)
	if _, ok := f.svc.Progress(attempt); ok {
		t.Fatal("a progress before any report")
	}
	id := int32(0)
	report := func(p *float32) {
		t.Helper()
		resp := &yarnpb.AllocateResponseProto{}
		if err := call(c, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(id), Progress: p}, resp); err != nil {
			t.Fatal(err)
		}
		id = resp.GetResponseId()
	}
	for _, tc := range []struct {
		name   string
		report *float32
		want   float32
	}{
		{"a report in range", proto.Float32(0.42), 0.42},
		{"no report: the last stands", nil, 0.42},
		{"above 1", proto.Float32(1.5), 1},
		{"positive infinity", proto.Float32(float32(math.Inf(1))), 1},
		{"NaN", proto.Float32(float32(math.NaN())), 0},
		{"negative", proto.Float32(-0.3), 0},
		{"negative infinity", proto.Float32(float32(math.Inf(-1))), 0},
	} {
		report(tc.report)
		if got, ok := f.svc.Progress(attempt); !ok || got != tc.want {
			t.Errorf("%s: progress %v (%v), want %v", tc.name, got, ok, tc.want)
		}
	}
}
