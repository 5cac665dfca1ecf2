package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/clientrm"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// serve starts an embedded RM over dir on loopback ports; stop shuts it
// down and waits for its store to close.
func serve(t *testing.T, dir string, opts rm.Options) (srv *Server, stop func()) {
	t.Helper()
	srv, err := New(Config{ClientAddr: "127.0.0.1:0", SchedulerAddr: "127.0.0.1:0", WebAddr: "127.0.0.1:0", DataDir: dir, RM: opts,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	return srv, func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestRemovedApplicationIsUnknown: an application removed as completed
// beyond --max-completed-applications is answered for as a real RM answers
// for one it never knew — ApplicationNotFoundException over the client
// protocol, 404 with NotFoundException's JSON over REST (its message as
// Hadoop 3's Jersey words it) — before and after
// a restart, while the one kept is served.
func TestRemovedApplicationIsUnknown(t *testing.T) {
	dir := t.TempDir()
	opts := rm.Options{MaxCompletedApplications: new(1)}
	srv, stop := serve(t, dir, opts)
	ctx := context.Background()
	removed, kept := srv.Manager.NewApplicationID(), srv.Manager.NewApplicationID()
	for _, id := range []records.ApplicationID{removed, kept} {
		if err := srv.Manager.Submit(ctx, rm.Submission{ID: id, User: "alice"}); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Manager.Kill(ctx, id, "alice", ""); err != nil {
			t.Fatal(err)
		}
	}
	check := func(srv *Server, when string) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		c, err := ipc.Dial(cctx, srv.ClientAddr(), ipc.ClientOptions{User: "alice", Protocol: clientrm.Protocol})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		appProto := func(id records.ApplicationID) *yarnpb.ApplicationIdProto {
			return &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(id.ClusterTimestamp), Id: proto.Int32(id.ID)}
		}
		attemptProto := &yarnpb.ApplicationAttemptIdProto{ApplicationId: appProto(removed), AttemptId: proto.Int32(1)}
		calls := []struct {
			method    string
			req, resp proto.Message
		}{
			{"getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: appProto(removed)}, &yarnpb.GetApplicationReportResponseProto{}},
			{"getApplicationAttempts", &yarnpb.GetApplicationAttemptsRequestProto{ApplicationId: appProto(removed)}, &yarnpb.GetApplicationAttemptsResponseProto{}},
			{"getApplicationAttemptReport", &yarnpb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: attemptProto},
				&yarnpb.GetApplicationAttemptReportResponseProto{}},
			{"getContainers", &yarnpb.GetContainersRequestProto{ApplicationAttemptId: attemptProto}, &yarnpb.GetContainersResponseProto{}},
			{"forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: appProto(removed)}, &yarnpb.KillApplicationResponseProto{}},
		}
		for _, call := range calls {
			err := c.Call(cctx, clientrm.Protocol, call.method, call.req, call.resp)
			var re *ipc.RemoteError
			if !errors.As(err, &re) || re.Class != yarnerr.ClassApplicationNotFound {
				t.Errorf("%s: %s of the removed application: %v, want %s", when, call.method, err, yarnerr.ClassApplicationNotFound)
			}
		}
		report := &yarnpb.GetApplicationReportResponseProto{}
		err = c.Call(cctx, clientrm.Protocol, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: appProto(kept)}, report)
		if err != nil || report.GetApplicationReport().GetYarnApplicationState() != yarnpb.YarnApplicationStateProto_KILLED {
			t.Errorf("%s: report of the kept application: %v, %v", when, report, err)
		}

		base := "http://" + srv.WebAddr() + "/ws/v1/cluster/apps/"
		for _, path := range []string{removed.String(), removed.String() + "/state", removed.String() + "/appattempts"} {
			status, body := get(t, cctx, base+path)
			re := body["RemoteException"]
			if status != http.StatusNotFound || re["exception"] != "NotFoundException" ||
				re["javaClassName"] != "org.apache.hadoop.yarn.webapp.NotFoundException" || re["message"] != "java.lang.Exception: app with id: "+removed.String()+" not found" {
				t.Errorf("%s: GET %s: %d %v", when, path, status, body)
			}
		}
		if status, body := get(t, cctx, base+kept.String()); status != http.StatusOK || body["app"]["state"] != "KILLED" {
			t.Errorf("%s: GET the kept application: %d %v", when, status, body)
		}
	}
	check(srv, "before the restart")
	stop()

	srv, stop = serve(t, dir, opts)
	defer stop()
	check(srv, "after the restart")
}

// get fetches a REST resource as JSON objects of one level under the root.
func get(t *testing.T, ctx context.Context, url string) (int, map[string]map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}
