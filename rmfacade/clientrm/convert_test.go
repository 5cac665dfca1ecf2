package clientrm

import (
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
)

// A report's tracking URL is a 3.4 RM's: a managed AM's is the RM's proxy
// in every state — the proxy forwards to the AM's UI, then to the
// history it named at the end — and an unmanaged AM's is its own.
func TestReportTrackingURL(t *testing.T) {
	const proxy = "http://rm:8088/proxy/"
	id := records.ApplicationID{ClusterTimestamp: 1, ID: 7}
	tests := []struct {
		name string
		app  records.Application
		want string
	}{
		{"a managed AM that has not registered", records.Application{State: records.AppAccepted}, proxy + id.String() + "/"},
		{"a managed AM running its own UI", records.Application{State: records.AppRunning, TrackingURL: "http://node:4040"}, proxy + id.String() + "/"},
		{"a managed AM that finished naming its history", records.Application{State: records.AppFinished, TrackingURL: "http://jhs:19888/jobhistory/job/job_1_0007"},
			proxy + id.String() + "/"},
		{"an unmanaged AM with its own UI", records.Application{State: records.AppRunning, UnmanagedAM: true, TrackingURL: "http://client:8080"}, "http://client:8080"},
		{"an unmanaged AM with none", records.Application{State: records.AppRunning, UnmanagedAM: true}, "N/A"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.app.ID = id
			if got := appReport(&tc.app, "root.default", records.Usage{}, proxy).GetTrackingUrl(); got != tc.want {
				t.Errorf("tracking URL %q, want %q", got, tc.want)
			}
		})
	}
}
