package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/weft-sh/weft/rmfacade/rest"
	"github.com/weft-sh/weft/rmfacade/state/kubestore"
	"github.com/weft-sh/weft/translator/kubeclient"
	"github.com/weft-sh/weft/translator/wellknown"
)

// HA configures weft-rm as one of several replicas, one active by leader
// election: YARN's RM HA with automatic failover, a coordination Lease in
// the place of ZooKeeper's ActiveStandbyElector and the state in the API
// server (Config.StateNamespace) in the place of ZKRMStateStore.
type HA struct {
	// ID is this replica's id (yarn.resourcemanager.ha.id), the Lease's
	// holder while it leads (required).
	ID string
	// LeaseNamespace and LeaseName name the Lease (defaults: the state's
	// namespace, "<cluster-id>-rm").
	LeaseNamespace, LeaseName string
	// LeaseDuration, RenewDeadline and RetryPeriod are the election's
	// timing (defaults 5s, 3s, 500ms). A standby may take over once it has
	// seen the Lease unrenewed for LeaseDuration, noticed at its next try:
	// up to LeaseDuration plus two RetryPeriods (with jitter) after the
	// active's last renewal, which leaves room within the 10s YARN users
	// expect of a failover (6s/4s/1s can take up to 9.7s on a loaded
	// 2-core machine; kube-controller-manager's 15/10/2 would take 17s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Pod, when set ("namespace/name": this replica's own pod), carries
	// the label wellknown.LabelRMActive while this replica is active; a new active
	// takes it off the others first. The Service selects on it, so Service
	// clients reach the active alone while every replica stays Ready —
	// readiness following leadership would stall a Deployment's rollout,
	// whose new pods, standbys, would never become Ready.
	Pod string
}

func (h *HA) setDefaults(cfg *Config) {
	if h.LeaseNamespace == "" {
		h.LeaseNamespace = cfg.StateNamespace
	}
	if h.LeaseName == "" {
		h.LeaseName = cfg.Launcher.ClusterID + "-rm"
	}
	if h.LeaseDuration <= 0 {
		h.LeaseDuration = 5 * time.Second
	}
	if h.RenewDeadline <= 0 {
		h.RenewDeadline = 3 * time.Second
	}
	if h.RetryPeriod <= 0 {
		h.RetryPeriod = 500 * time.Millisecond
	}
}

// ErrLeadershipLost is returned by RunHA when this replica stopped leading
// while it should have gone on: its process should exit and start again as
// a standby, as a YARN RM that lost its ZooKeeper session does.
var ErrLeadershipLost = errors.New("leadership lost")

// RunHA runs one replica until ctx ends. While another leads it is a
// standby: its web port answers as a standby RM's (cluster info with
// haState STANDBY, /isActive 405, everything else 503 naming the active)
// and its client and AM ports are closed, as a standby RM's are, so that
// Hadoop's failover proxy (ConfiguredRMFailoverProxyProvider) moves on to
// the next rm-id. Once it wins the Lease it loads the state from the API
// server and serves as the active RM. It writes nothing once it could have
// lost the Lease (RenewDeadline after its last renewal, short of the
// LeaseDuration after which another may take it), and the state store's
// log fences any write that still races a new leader.
func RunHA(ctx context.Context, cfg Config, ha HA) error {
	cfg.setDefaults()
	if cfg.Kubernetes == nil || cfg.StateNamespace == "" {
		return errors.New("HA needs the state in the API server: a kubeconfig and a state namespace")
	}
	if ha.ID == "" {
		return errors.New("HA needs this replica's id")
	}
	ha.setDefaults(&cfg)
	client, err := kubeclient.New(cfg.Kubernetes)
	if err != nil {
		return err
	}
	lock := &renewals{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: ha.LeaseNamespace, Name: ha.LeaseName},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: ha.ID},
	}}
	electing, stopElecting := context.WithCancel(context.Background())
	defer stopElecting()
	var leading atomic.Bool
	cfg.HA = true
	cfg.MayWrite = func() bool {
		return leading.Load() && electing.Err() == nil && time.Since(lock.last()) < ha.RenewDeadline
	}

	var standby *http.Server
	var (
		mu     sync.Mutex
		served chan struct{} // closed when the active's Serve returned
		runErr error
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: "weft-rm", ReleaseOnCancel: true,
		LeaseDuration: ha.LeaseDuration, RenewDeadline: ha.RenewDeadline, RetryPeriod: ha.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				mu.Lock()
				done := make(chan struct{})
				served = done
				mu.Unlock()
				defer close(done)
				// Stop serving once either the Lease or the process ends.
				sctx, cancel := context.WithCancel(lctx)
				defer cancel()
				stop := context.AfterFunc(ctx, cancel)
				defer stop()
				leading.Store(true)
				start := time.Now()
				shutdown, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
				standby.Shutdown(shutdown) // frees the web port for the active's
				cancelShutdown()
				err := func() error {
					srv, err := New(cfg)
					if err != nil {
						return err
					}
					// Its ports are bound: the Service may send clients now.
					if err := markActive(lctx, client, ha.Pod, true); err != nil {
						cfg.Logger.Warn("active pod not labelled: Service clients may not reach this RM", "pod", ha.Pod, "err", err)
					}
					cfg.Logger.Info("active resource manager", "id", ha.ID, "tookOverIn", time.Since(start).Round(time.Millisecond))
					return srv.Serve(sctx)
				}()
				mu.Lock()
				runErr = err
				mu.Unlock()
				stopElecting() // releases the Lease now that nothing is written
			},
			OnStoppedLeading: func() { leading.Store(false) },
			OnNewLeader: func(id string) {
				if id != ha.ID {
					cfg.Logger.Info("the active resource manager is another replica", "active", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.WebAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.WebAddr, err)
	}
	standby = &http.Server{Handler: rest.NewStandbyHandler(rest.StandbyOptions{StartedOn: time.Now().UnixMilli(),
		StateStore: kubestore.StoreName, Active: elector.GetLeader}), ReadHeaderTimeout: 10 * time.Second}
	go standby.Serve(ln)
	// Restarted after losing the lead, this pod may still carry the label.
	if err := markActive(ctx, client, ha.Pod, false); err != nil {
		cfg.Logger.Warn("standby pod label not cleared", "pod", ha.Pod, "err", err)
	}
	cfg.Logger.Info("standby resource manager", "id", ha.ID, "web", ln.Addr().String(), "lease", ha.LeaseNamespace+"/"+ha.LeaseName)
	// On ctx's end, let the active stop serving before the Lease goes.
	go func() {
		select {
		case <-ctx.Done():
		case <-electing.Done():
			return
		}
		mu.Lock()
		done := served
		mu.Unlock()
		if done != nil {
			<-done
		}
		stopElecting()
	}()
	elector.Run(electing)
	standby.Close()
	mu.Lock()
	done := served
	mu.Unlock()
	if done != nil {
		<-done // the active's Serve has returned and set runErr
	}
	mu.Lock()
	err = runErr
	mu.Unlock()
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil:
		return nil
	case done != nil:
		return ErrLeadershipLost
	}
	return nil
}

// renewals is the Lease lock, noting when this replica last renewed it
// (the time taken before the write, so the note never runs ahead of the
// Lease's own renewTime).
type renewals struct {
	resourcelock.Interface
	lastNano atomic.Int64
}

func (r *renewals) note(ler resourcelock.LeaderElectionRecord, start time.Time, err error) error {
	if err == nil && ler.HolderIdentity == r.Identity() {
		r.lastNano.Store(start.UnixNano())
	}
	return err
}

func (r *renewals) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	return r.note(ler, start, r.Interface.Create(ctx, ler))
}

func (r *renewals) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	return r.note(ler, start, r.Interface.Update(ctx, ler))
}

func (r *renewals) last() time.Time { return time.Unix(0, r.lastNano.Load()) }

// markActive labels pod ("namespace/name") as the active replica's, taking
// the label off every other pod of the namespace first; or, with active
// false, takes it off pod. Nothing to do without a pod.
func markActive(ctx context.Context, client kubernetes.Interface, pod string, active bool) error {
	ns, name, ok := strings.Cut(pod, "/")
	if !ok {
		return nil
	}
	pods := client.CoreV1().Pods(ns)
	patch := func(name string, value any) error {
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{wellknown.LabelRMActive: value}}})
		_, err := pods.Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
		return err
	}
	if !active {
		return patch(name, nil)
	}
	others, err := pods.List(ctx, metav1.ListOptions{LabelSelector: wellknown.LabelRMActive})
	if err != nil {
		return err
	}
	for _, o := range others.Items {
		if o.Name != name {
			if err := patch(o.Name, nil); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return patch(name, "true")
}
