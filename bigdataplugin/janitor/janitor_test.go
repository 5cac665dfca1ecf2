package janitor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type fakeRM map[string]string // app → state; missing means unknown

func (f fakeRM) Ended(_ context.Context, app string) (bool, error) {
	switch s := f[app]; s {
	case "ERROR":
		return false, errors.New("rm down")
	case "FINISHED", "FAILED", "KILLED", "":
		return true, nil
	default:
		return false, nil
	}
}

type fakePods map[string]bool

func (f fakePods) AppsOnNode(context.Context) (map[string]bool, error) { return f, nil }

func TestSweep(t *testing.T) {
	const app = "application_1_0001"
	cases := []struct {
		name      string
		state     string
		podOnNode bool
		logAge    time.Duration
		wantLocal bool // local dirs still there
		wantLogs  bool
		wantEnded bool
		wantErr   bool
	}{
		{name: "running", state: "RUNNING", wantLocal: true, wantLogs: true},
		{name: "finished, logs recent", state: "FINISHED", logAge: time.Minute, wantLogs: true, wantEnded: true},
		{name: "finished, logs past retention", state: "FINISHED", logAge: 4 * time.Hour, wantEnded: true},
		{name: "killed and unknown alike", state: "", logAge: 4 * time.Hour, wantEnded: true},
		{name: "ended but a pod still on the node", state: "FAILED", podOnNode: true, logAge: 4 * time.Hour, wantLocal: true, wantLogs: true},
		{name: "rm unreachable", state: "ERROR", logAge: 4 * time.Hour, wantLocal: true, wantLogs: true, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			localRoot, logRoot := filepath.Join(root, "local"), filepath.Join(root, "logs")
			appDir := filepath.Join(localRoot, "usercache", "alice", "appcache", app)
			other := filepath.Join(localRoot, "usercache", "bob", "appcache", "application_1_0002")
			logDir := filepath.Join(logRoot, app, "container_1_0001_01_000001")
			for _, d := range []string{filepath.Join(appDir, "output"), other, logDir} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(logDir, "stderr"), []byte("x"), 0o644)
			now := time.Now()
			old := now.Add(-c.logAge)
			for _, p := range []string{filepath.Join(logDir, "stderr"), logDir, filepath.Dir(logDir)} {
				os.Chtimes(p, old, old)
			}
			var ended, cacheRemoved []string
			j := New(Options{
				LocalRoot: localRoot, LogRoot: logRoot,
				Apps: fakeRM{app: c.state, "application_1_0002": "RUNNING"}, Pods: fakePods{app: c.podOnNode},
				AppEnded:       func(a string) { ended = append(ended, a) },
				RemoveAppCache: func(a string) error { cacheRemoved = append(cacheRemoved, a); return nil },
				Now:            func() time.Time { return now },
			})
			err := j.Sweep(context.Background())
			if (err != nil) != c.wantErr {
				t.Fatalf("Sweep: %v", err)
			}
			if exists(appDir) != c.wantLocal {
				t.Errorf("local dir exists = %v, want %v", exists(appDir), c.wantLocal)
			}
			if exists(filepath.Dir(logDir)) != c.wantLogs {
				t.Errorf("log dir exists = %v, want %v", exists(filepath.Dir(logDir)), c.wantLogs)
			}
			if !exists(other) {
				t.Error("a running application's directory was removed")
			}
			if got := len(ended) == 1 && len(cacheRemoved) == 1; got != c.wantEnded {
				t.Errorf("ended %v, cache removed %v", ended, cacheRemoved)
			}
			// Once an ended application left nothing, what the RM said
			// of it is forgotten; while its logs stay, it is kept.
			j.Sweep(context.Background())
			if want := c.wantEnded && c.wantLogs; j.ended[app] != want {
				t.Errorf("after another sweep, remembered as ended = %v, want %v", j.ended[app], want)
			}
		})
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestRMWeb(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, "/ws/v1/cluster/apps/") {
		case "application_1_0001":
			w.Write([]byte(`{"app":{"id":"application_1_0001","state":"RUNNING"}}`))
		case "application_1_0002":
			w.Write([]byte(`{"app":{"id":"application_1_0002","state":"KILLED"}}`))
		case "application_1_0003":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"RemoteException":{"exception":"NotFoundException"}}`))
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	rm := RMWeb{Address: strings.TrimPrefix(srv.URL, "http://")}
	for app, want := range map[string]bool{"application_1_0001": false, "application_1_0002": true, "application_1_0003": true} {
		got, err := rm.Ended(context.Background(), app)
		if err != nil || got != want {
			t.Errorf("Ended(%s) = %v, %v; want %v", app, got, err, want)
		}
	}
	if _, err := rm.Ended(context.Background(), "application_1_0009"); err == nil {
		t.Error("a server error is not an answer")
	}
	// RM HA: a replica that is down and a standby are passed over for the
	// active.
	standby := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable) // as weft-rm's standby answers
		w.Write([]byte(`{"RemoteException":{"exception":"StandbyException"}}`))
	}))
	defer standby.Close()
	down, _ := net.Listen("tcp", "127.0.0.1:0")
	down.Close()
	ha := RMWeb{Address: down.Addr().String() + "," + strings.TrimPrefix(standby.URL, "http://") + "," + rm.Address}
	if got, err := ha.Ended(context.Background(), "application_1_0002"); err != nil || !got {
		t.Errorf("through HA addresses: %v, %v", got, err)
	}
	if _, err := (RMWeb{Address: down.Addr().String() + "," + strings.TrimPrefix(standby.URL, "http://")}).Ended(context.Background(), "application_1_0002"); err == nil {
		t.Error("no active replica answered, yet an answer")
	}
}
