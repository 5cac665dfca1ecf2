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
		{"a managed AM that finished naming its history", records.Application{State: records.AppFinished, FinalStatus: records.FinalSucceeded, TrackingURL: "http://jhs:19888/jobhistory/job/job_1_0007"},
			proxy + id.String() + "/"},
		{"an unmanaged AM with its own UI", records.Application{State: records.AppRunning, UnmanagedAM: true, TrackingURL: "http://client:8080"}, "http://client:8080"},
		{"an unmanaged AM with none", records.Application{State: records.AppRunning, UnmanagedAM: true}, "N/A"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.app.ID = id
			if got := appReport(&tc.app, 0, "root.default", records.Usage{}, proxy).GetTrackingUrl(); got != tc.want {
				t.Errorf("tracking URL %q, want %q", got, tc.want)
			}
			if tc.app.State == records.AppFinished {
				if got := appReport(&tc.app, 0, "root.default", records.Usage{}, proxy).GetOriginalTrackingUrl(); got != tc.app.TrackingURL {
					t.Errorf("original tracking URL %q, want the history its AM named, %q", got, tc.app.TrackingURL)
				}
			}
		})
	}
}

// A running application's reported progress is its AM's last report; an
// application whose AM has not reported, or unregistered, or ended, its
// record's.
func TestReportProgress(t *testing.T) {
	id := records.ApplicationID{ClusterTimestamp: 1, ID: 7}
	at := records.AttemptID{App: id, ID: 1}
	s := &Service{progress: func(a records.AttemptID) (float32, bool) { return 0.3, a == at }}
	tests := []struct {
		name string
		app  records.Application
		want float32
	}{
		{"running, its AM reporting", records.Application{State: records.AppRunning, CurrentAttempt: 1, FinalStatus: records.FinalUndefined}, 0.3},
		{"running, another attempt's AM silent", records.Application{State: records.AppRunning, CurrentAttempt: 2, FinalStatus: records.FinalUndefined, Progress: 0.1}, 0.1},
		{"unregistered, its container not yet exited", records.Application{State: records.AppRunning, CurrentAttempt: 1, FinalStatus: records.FinalSucceeded, Progress: 1}, 1},
		{"finished", records.Application{State: records.AppFinished, CurrentAttempt: 1, FinalStatus: records.FinalSucceeded, Progress: 1}, 1},
	}
	for _, tc := range tests {
		tc.app.ID = id
		if got := s.progressOf(&tc.app); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
