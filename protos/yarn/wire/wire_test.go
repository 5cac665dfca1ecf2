package wire

import (
	"testing"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
)

func TestIDsRoundTrip(t *testing.T) {
	app := records.ApplicationID{ClusterTimestamp: 1700000000123, ID: 42}
	cases := []records.ContainerID{
		{Attempt: records.AttemptID{App: app, ID: 1}, ID: 7},
		{Attempt: records.AttemptID{App: app, ID: 3}, ID: 5<<40 | 123456}, // an epoch in the high bits
		{},
	}
	for _, c := range cases {
		p := ContainerID(c)
		// Through the wire bytes, as a peer would read them.
		b, err := proto.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back := &yarnpb.ContainerIdProto{}
		if err := proto.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		if got := ContainerIDOf(back); got != c {
			t.Errorf("container %v came back as %v", c, got)
		}
		if got := AppIDOf(back.GetAppId()); got != c.Attempt.App {
			t.Errorf("container %v: deprecated app_id %v, want the attempt's application", c, got)
		}
		if got := AttemptIDOf(AttemptID(c.Attempt)); got != c.Attempt {
			t.Errorf("attempt %v came back as %v", c.Attempt, got)
		}
	}
}

func TestContainerIDOf(t *testing.T) {
	app := &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(17), Id: proto.Int32(2)}
	other := &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(99), Id: proto.Int32(9)}
	want := records.ContainerID{Attempt: records.AttemptID{App: records.ApplicationID{ClusterTimestamp: 17, ID: 2}, ID: 1}, ID: 4}
	cases := []struct {
		name string
		p    *yarnpb.ContainerIdProto
		want records.ContainerID
	}{
		{"the attempt's application wins over app_id",
			&yarnpb.ContainerIdProto{AppId: other, AppAttemptId: &yarnpb.ApplicationAttemptIdProto{ApplicationId: app, AttemptId: proto.Int32(1)}, Id: proto.Int64(4)}, want},
		{"app_id when the attempt names no application",
			&yarnpb.ContainerIdProto{AppId: app, AppAttemptId: &yarnpb.ApplicationAttemptIdProto{AttemptId: proto.Int32(1)}, Id: proto.Int64(4)}, want},
		{"nil is the zero id", nil, records.ContainerID{}},
	}
	for _, c := range cases {
		if got := ContainerIDOf(c.p); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestResource(t *testing.T) {
	for _, r := range []records.Resource{{MemoryMB: 1536, VCores: 3}, {}} {
		if got := ResourceOf(Resource(r)); got != r {
			t.Errorf("%+v came back as %+v", r, got)
		}
	}
	if got := ResourceOf(nil); got != (records.Resource{}) {
		t.Errorf("nil resource: %+v", got)
	}
}

func TestSplitNodeID(t *testing.T) {
	cases := []struct {
		id, host string
		port     int32
		err      bool
	}{
		{"node-1:8041", "node-1", 8041, false},
		{"10.0.0.7:0", "10.0.0.7", 0, false},
		{"fe80::1:8041", "fe80::1", 8041, false},
		{"node-1", "node-1", 0, true},
		{"node-1:", "node-1:", 0, true},
		{"node-1:http", "node-1:http", 0, true},
		{"node-1:-5", "node-1:-5", 0, true},
		{"node-1:99999999999", "node-1:99999999999", 0, true},
	}
	for _, c := range cases {
		host, port, err := SplitNodeID(c.id)
		if host != c.host || port != c.port || (err != nil) != c.err {
			t.Errorf("SplitNodeID(%q) = %q, %d, %v; want %q, %d, error %v", c.id, host, port, err, c.host, c.port, c.err)
		}
		p := NodeID(c.id)
		if p.GetHost() != c.host || p.GetPort() != c.port {
			t.Errorf("NodeID(%q) = %v", c.id, p)
		}
		if !c.err && NodeIDString(p) != c.id {
			t.Errorf("NodeIDString(NodeID(%q)) = %q", c.id, NodeIDString(p))
		}
	}
}
