package kubeclient

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
)

// WaitForSync answers true once every informer has listed, and false when
// its context ends first.
func TestWaitForSync(t *testing.T) {
	yes := func() bool { return true }
	var looks atomic.Int32
	third := func() bool { return looks.Add(1) >= 3 } // lists on the third look
	cases := []struct {
		name   string
		synced []cache.InformerSynced
		want   bool
	}{
		{"none to wait for", nil, true},
		{"all listed", []cache.InformerSynced{yes, yes}, true},
		{"one lists later", []cache.InformerSynced{yes, third}, true},
		{"one never lists", []cache.InformerSynced{yes, func() bool { return false }}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if got := WaitForSync(ctx, tc.synced...); got != tc.want {
				t.Errorf("WaitForSync = %v, want %v", got, tc.want)
			}
		})
	}
}
