package rest

import (
	"net/http/httptest"
	"testing"
)

// An active RM and a standby answer YARN's HA probes as a 3.4 RM pair
// does; a standby refuses the rest, naming the active when it knows it.
func TestHAStates(t *testing.T) {
	active, _ := newServer(t)
	check(t, active, []exchange{
		{name: "active isActive", method: "GET", path: "/isActive", wantStatus: 200, wantText: []string{"I am Active!"}},
	})
	leader := ""
	standby := httptest.NewServer(NewStandbyHandler(StandbyOptions{StartedOn: 1, StateStore: "s", Active: func() string { return leader }}))
	t.Cleanup(standby.Close)
	check(t, standby, []exchange{
		{name: "isActive", method: "GET", path: "/isActive", wantStatus: 405, wantText: []string{"I am not Active!"}},
		{name: "info", method: "GET", path: "/ws/v1/cluster/info", wantStatus: 200, wantJSON: map[string]string{
			"clusterInfo.haState": "STANDBY", "clusterInfo.state": "STARTED", "clusterInfo.rmStateStoreName": "s"}},
		{name: "cluster/", method: "GET", path: "/ws/v1/cluster/", wantStatus: 200, wantJSON: map[string]string{"clusterInfo.haState": "STANDBY"}},
		{name: "no active known", method: "GET", path: "/ws/v1/cluster/apps", wantStatus: 503, wantJSON: map[string]string{
			"RemoteException.exception": "StandbyException", "RemoteException.message": "This is standby RM; no active RM is known yet."}},
	})
	leader = "rm1"
	check(t, standby, []exchange{
		{name: "active named", method: "PUT", path: "/ws/v1/cluster/apps/application_1_0001/state", body: `{"state":"KILLED"}`, wantStatus: 503,
			wantJSON: map[string]string{"RemoteException.javaClassName": "org.apache.hadoop.ipc.StandbyException",
				"RemoteException.message": "This is standby RM. The active RM is rm1."}},
	})
}
