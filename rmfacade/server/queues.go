package server

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
	"github.com/weft-sh/weft/quota/crd"
	"github.com/weft-sh/weft/rmfacade/queuesync"
)

// setupQueueSync runs the Queue controller when the tree comes from the
// cluster's Queue objects and their API is served; without it the tree
// read at start (the default one) stays.
func (s *Server) setupQueueSync() error {
	if !s.queuesFromCluster {
		return nil
	}
	gvk := v1alpha1.GroupVersion.WithKind("Queue")
	if _, err := s.controllers.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			s.cfg.Logger.Warn("the Queue API is not installed: the queue tree is not refreshed", "err", err)
			return nil
		}
		return fmt.Errorf("queue API: %w", err)
	}
	s.queueSync = queuesync.New(s.Manager, s.controllers.GetClient(), s.cfg.Queues, s.crds, queuesync.Options{
		VCoreMilli: s.cfg.Launcher.Profile.VCoreMilli(), Events: s.controllers.GetEventRecorderFor("weft-rm"), Logger: s.cfg.Logger})
	if err := s.queueSync.SetupWithManager(s.controllers); err != nil {
		return fmt.Errorf("queue sync: %w", err)
	}
	return nil
}

// quotas are the scheduler's queue quotas: from the Queue objects when
// the tree comes from the cluster (absolute guarantees and maxima, time
// windows applied), else from the configured capacities as shares of
// the cluster.
func (s *Server) quotas(cluster quota.Resource, now time.Time) ([]quota.QueueQuota, error) {
	crds := s.crds
	if s.queueSync != nil {
		crds = s.queueSync.Objects()
	}
	if crds != nil {
		return crd.QuotasFromCRDs(crds, now, s.cfg.Launcher.Profile.VCoreMilli())
	}
	return quota.QuotasFromQueues(s.Manager.Queues().Queues(), cluster), nil
}
