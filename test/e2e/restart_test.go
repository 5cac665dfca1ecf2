package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/rmfacade/clientrm"
)

func dialRM(ctx context.Context, addr, user string) *ipc.Client {
	c, err := ipc.Dial(ctx, addr, ipc.ClientOptions{User: user, Protocol: clientrm.Protocol})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { c.Close() }) // the server may have closed it already
	return c
}

func submitApp(ctx context.Context, c *ipc.Client, name, queue string) *yarnpb.ApplicationIdProto {
	na := &yarnpb.GetNewApplicationResponseProto{}
	Expect(c.Call(ctx, clientrm.Protocol, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na)).To(Succeed())
	Expect(c.Call(ctx, clientrm.Protocol, "submitApplication", &yarnpb.SubmitApplicationRequestProto{
		ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{ApplicationId: na.GetApplicationId(),
			ApplicationName: proto.String(name), Queue: proto.String(queue),
			Resource: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}},
	}, &yarnpb.SubmitApplicationResponseProto{})).To(Succeed())
	return na.GetApplicationId()
}

type appSummary struct{ ID, State, Queue, User, Name string }

func listApps(ctx context.Context, c *ipc.Client) []appSummary {
	resp := &yarnpb.GetApplicationsResponseProto{}
	Expect(c.Call(ctx, clientrm.Protocol, "getApplications", &yarnpb.GetApplicationsRequestProto{}, resp)).To(Succeed())
	var out []appSummary
	for _, r := range resp.GetApplications() {
		id := r.GetApplicationId()
		out = append(out, appSummary{
			ID:    (&yarnpb.ApplicationIdProto{Id: id.Id, ClusterTimestamp: id.ClusterTimestamp}).String(),
			State: r.GetYarnApplicationState().String(), Queue: r.GetQueue(), User: r.GetUser(), Name: r.GetName()})
	}
	return out
}

var _ = Describe("weft-rm restart", func() {
	It("keeps every acknowledged application with its id, state and queue", func(ctx SpecContext) {
		rm := startRM(ctx)
		c := dialRM(ctx, rm.ClientAddr, "alice")
		kept := submitApp(ctx, c, "kept", "default")
		killed := submitApp(ctx, c, "killed", "default")
		Expect(c.Call(ctx, clientrm.Protocol, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: killed},
			&yarnpb.KillApplicationResponseProto{})).To(Succeed())
		before := listApps(ctx, c)
		Expect(before).To(HaveLen(2))

		Expect(rm.Stop()).To(Succeed())
		Expect(rm.Start(ctx)).To(Succeed())

		c2 := dialRM(ctx, rm.ClientAddr, "bob")
		Expect(listApps(ctx, c2)).To(Equal(before))
		report := &yarnpb.GetApplicationReportResponseProto{}
		Expect(c2.Call(ctx, clientrm.Protocol, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: kept}, report)).To(Succeed())
		Expect(report.GetApplicationReport().GetYarnApplicationState()).To(Equal(yarnpb.YarnApplicationStateProto_ACCEPTED))

		// New ids come from the new incarnation and never collide.
		fresh := submitApp(ctx, c2, "fresh", "default")
		Expect(fresh.GetClusterTimestamp()).NotTo(Equal(kept.GetClusterTimestamp()))

		// The REST view agrees.
		resp, err := http.Get("http://" + rm.WebAddr + "/ws/v1/cluster/apps?states=KILLED")
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		var body struct {
			Apps struct{ App []struct{ ID, Name string } } `json:"apps"`
		}
		Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
		Expect(body.Apps.App).To(HaveLen(1))
		Expect(body.Apps.App[0].Name).To(Equal("killed"))
	}, SpecTimeout(2*time.Minute))
})
