package records

import "testing"

func TestUsageOf(t *testing.T) {
	gb := Resource{MemoryMB: 1024, VCores: 1}
	cases := []struct {
		name       string
		containers []*Container
		want       Usage
	}{
		{"none", nil, Usage{}},
		{"AM and a task running for 10 s", []*Container{
			{ID: ContainerID{ID: 1}, Resource: gb, State: ContainerRunning, StartTime: 1000},
			{ID: ContainerID{ID: 2}, Resource: Resource{MemoryMB: 2048, VCores: 2}, State: ContainerNew, StartTime: 1000},
		}, Usage{Containers: 2, Allocated: Resource{MemoryMB: 3072, VCores: 3}, MemorySeconds: 30720, VcoreSeconds: 30}},
		{"a completed task counts its 4 s, not its resources", []*Container{
			{ID: ContainerID{ID: 2}, Resource: gb, State: ContainerComplete, StartTime: 1000, FinishTime: 5000},
		}, Usage{MemorySeconds: 4096, VcoreSeconds: 4}},
		{"no start time: held nothing yet", []*Container{
			{ID: ContainerID{ID: 2}, Resource: gb, State: ContainerNew},
		}, Usage{Containers: 1, Allocated: gb}},
	}
	for _, c := range cases {
		if got := UsageOf(c.containers, 11000); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
