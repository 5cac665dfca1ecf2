package dao

import (
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Without their appendJSON methods, so that encoding/json encodes them by
// reflection: the reference the appended JSON must equal.
type (
	reflectedAppInfo  AppInfo
	reflectedAppsInfo struct {
		App []*reflectedAppInfo `json:"app,omitempty"`
	}
)

// TestAppendJSONMatchesReflection encodes random applications both ways:
// every string shape encoding/json escapes (quotes, control characters,
// HTML characters it is told to leave, U+2028, invalid UTF-8), Java floats'
// special values, and each optional member present and absent.
func TestAppendJSONMatchesReflection(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "root.default", "application_1700000000000_0001", `say "hi"`, `C:\dir`, "tab\there", "nl\n",
		"<b>&amp;</b>", "line\u2028sep\u2029", "héllo wörld", "\xff\xfe bad", "\x00\x1f", "日本語", "http://n1:8042/node/containerlogs/c/u"}
	floats := []float32{0, 1, 100, 12.5, 0.001, 1e7, 1.0e-4, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -3.25}
	pick := func() string { return strs[rng.IntN(len(strs))] }
	ptr := func() *string {
		if rng.IntN(3) == 0 {
			return nil
		}
		return Ptr(pick())
	}
	num := func() int64 { return rng.Int64N(1<<40) - 1<<20 }
	longMap := func() LongMap {
		var m LongMap
		for range rng.IntN(3) {
			m = append(m, KeyLong{Key: pick(), Value: num()})
		}
		return m
	}
	resource := func() ResourceInfo {
		switch rng.IntN(3) {
		case 0:
			return ResourceInfo{Memory: num(), VCores: int32(num())}
		case 1:
			return NewResourceInfo(num(), int32(num()))
		}
		r := NewResourceInfo(num(), 4)
		r.ResourceInformations.ResourceInformation = append(r.ResourceInformations.ResourceInformation,
			ResourceInformation{Name: pick(), Units: pick(), Attributes: StringMap{{Key: pick(), Value: pick()}}, Tags: []string{pick(), pick()}})
		if rng.IntN(2) == 0 {
			r.ResourceInformations.ResourceInformation = nil
		}
		return r
	}
	random := func() *AppInfo {
		a := &AppInfo{ID: pick(), User: pick(), Name: pick(), Queue: pick(), State: pick(), FinalStatus: pick(),
			Progress: Float32(floats[rng.IntN(len(floats))]), TrackingUI: pick(), TrackingURL: pick(), Diagnostics: pick(),
			ClusterID: num(), RMClusterID: pick(), ApplicationType: pick(), ApplicationTags: pick(), Priority: int32(num()),
			StartedTime: num(), LaunchTime: num(), FinishedTime: num(), ElapsedTime: num(), AMContainerLogs: pick(),
			AMHostHTTPAddress: pick(), AMRPCAddress: pick(), MasterNodeID: pick(), AllocatedMB: num(), AllocatedVCores: num(),
			ReservedMB: num(), ReservedVCores: num(), RunningContainers: int32(num()), MemorySeconds: num(), VcoreSeconds: num(),
			QueueUsagePercentage: Float32(floats[rng.IntN(len(floats))]), ClusterUsagePercentage: Float32(floats[rng.IntN(len(floats))]),
			ResourceSecondsMap: longMap(), PreemptedResourceMB: num(), PreemptedResourceVCores: num(),
			NumNonAMContainerPreempted: int32(num()), NumAMContainerPreempted: int32(num()), PreemptedMemorySeconds: num(),
			PreemptedVcoreSeconds: num(), PreemptedResourceSecondsMap: longMap(), LogAggregationStatus: pick(),
			UnmanagedApplication: rng.IntN(2) == 0, AppNodeLabelExpression: ptr(), AMNodeLabelExpression: ptr()}
		if rng.IntN(2) == 0 {
			a.ResourceRequests = []ResourceRequestInfo{{Priority: 1, ResourceName: pick(), Capability: NewResourceInfo(1024, 1), NumContainers: 2}}
		}
		if rng.IntN(2) == 0 {
			a.ResourceInfo = &ResourcesInfo{}
			for range rng.IntN(3) {
				p := PartitionResourcesInfo{PartitionName: pick(), Used: resource(), Reserved: resource(), Pending: resource()}
				if rng.IntN(2) == 0 {
					am, limit, userLimit := resource(), resource(), resource()
					p.AMUsed, p.AMLimit, p.UserAMLimit = &am, &limit, &userLimit
				}
				a.ResourceInfo.ResourceUsagesByPartition = append(a.ResourceInfo.ResourceUsagesByPartition, p)
			}
		}
		switch rng.IntN(3) {
		case 0:
			a.Timeouts = UnlimitedLifetime()
		case 1:
			a.Timeouts = &AppTimeoutsInfo{}
		}
		return a
	}
	var list AppsInfo
	var reference reflectedAppsInfo
	for i := range 500 {
		a := random()
		got, err := EncodeJSON(a)
		if err != nil {
			t.Fatal(err)
		}
		want, err := marshalJSONNoEscape((*reflectedAppInfo)(a))
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"app":` + string(want) + `}`; string(got) != want {
			t.Fatalf("application %d:\nappended:  %s\nreflected: %s", i, got, want)
		}
		list.App = append(list.App, a)
		reference.App = append(reference.App, (*reflectedAppInfo)(a))
	}
	for _, n := range []int{0, 1, len(list.App)} {
		got, err := EncodeJSON(&AppsInfo{App: list.App[:n]})
		if err != nil {
			t.Fatal(err)
		}
		want, err := marshalJSONNoEscape(&reflectedAppsInfo{App: reference.App[:n]})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"apps":` + string(want) + `}`; string(got) != want {
			t.Fatalf("%d applications: appended and reflected JSON differ\nappended:  %.300s\nreflected: %.300s", n, got, want)
		}
		// Write streams the list in chunks, and an AppsStream makes it while
		// writing: the same bytes must arrive, and as XML the same document.
		stream := AppsStream(func(yield func(*AppInfo) bool) {
			for _, a := range list.App[:n] {
				if !yield(a) {
					return
				}
			}
		})
		reused := AppsStream(func(yield func(*AppInfo) bool) {
			var one AppInfo
			for _, a := range list.App[:n] {
				one = *a
				if !yield(&one) {
					return
				}
			}
		})
		wantXML, err := EncodeXML(&AppsInfo{App: list.App[:n]})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			v      any
			accept string
			ct     string
			want   []byte
		}{
			{&AppsInfo{App: list.App[:n]}, "", ContentTypeJSON, got},
			{stream, "", ContentTypeJSON, got},
			{stream, "application/xml", ContentTypeXML, wantXML},
			{reused, "", ContentTypeJSON, got},
			{reused, "application/xml", ContentTypeXML, wantXML},
		} {
			req := httptest.NewRequest(http.MethodGet, "/ws/v1/cluster/apps", nil)
			if c.accept != "" {
				req.Header.Set("Accept", c.accept)
			}
			rec := httptest.NewRecorder()
			Write(rec, req, http.StatusOK, c.v)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != c.ct || rec.Body.String() != string(c.want) {
				t.Fatalf("%d applications as %T (%s): status %d, %q, body of %d bytes differs from the %d encoded", n, c.v, c.ct,
					rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len(), len(c.want))
			}
		}
	}
	if n := len(list.App); n < 2*streamChunk/1000 {
		t.Fatalf("only %d applications: too few to stream more than one chunk", n)
	}
}
