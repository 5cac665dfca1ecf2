package kubeclient

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// syncPoll is how often WaitForSync looks at the informers.
const syncPoll = 5 * time.Millisecond

// WaitForSync waits until every informer has listed once, as client-go's
// cache.WaitForCacheSync does, and reports whether they all did before ctx
// ended. It looks every 5 ms, not every 100: a scheduler started against
// pending pods waits on its lists before its first cycle, and client-go's
// poll saw lists done at 142 ms only at 200 (test/bench/binding: weft-rm's
// first binding 0.36 s after its start, the API server's own binder's
// after 0.01-0.06 s). A look is a few atomic loads.
func WaitForSync(ctx context.Context, synced ...cache.InformerSynced) bool {
	err := wait.PollUntilContextCancel(ctx, syncPoll, true, func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	})
	return err == nil
}
