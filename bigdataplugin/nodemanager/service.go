// Package nodemanager is the node plugin's NodeManager face: YARN's
// ContainerManagementProtocol, which ApplicationMasters call to start,
// stop and query the containers the RM granted them on this node. A
// container's process is a pod bound to this node; the pod's status is the
// container's, so nothing is kept here that a restart could lose.
package nodemanager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/weft-sh/weft/bigdataplugin/shuffle"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/credentials"
	"github.com/weft-sh/weft/translator/wellknown"
)

// Protocol is the name AMs give the protocol in each call.
const Protocol = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"

// Java exception classes of this protocol.
const (
	ClassYarnException     = "org.apache.hadoop.yarn.exceptions.YarnException"
	ClassInvalidAuxService = "org.apache.hadoop.yarn.exceptions.InvalidAuxServiceException"
)

// Options configures the service.
type Options struct {
	// NodeName is the Kubernetes node this plugin serves; with Port it is
	// the NodeId (host:port) AMs reach it at.
	NodeName       string
	Port, HTTPPort int32
	// Namespace holds the pods of YARN applications.
	Namespace string
	// ClusterID names the RM this node serves, on every pod it makes.
	ClusterID string
	Profile   translator.Profile
	Runtime   translator.Runtime
	Tiers     translator.TierPolicy
	Keys      *nmtokens.Keys
	// Shuffle, when set, is the node's MapReduce shuffle service
	// ("mapreduce_shuffle"): it learns jobs' tokens from the launch
	// contexts, and AMs learn its port from every StartContainers answer.
	Shuffle *shuffle.Service
	// AuxServices, when set, are the node's other auxiliary services
	// (Spark's spark_shuffle): applications are initialized with them
	// from launch contexts' service data, and AMs get their metadata.
	AuxServices AuxServices
	Logger      *slog.Logger
}

// AuxServices is the part of the node's auxiliary services host
// (auxservices.Host) the NodeManager side drives.
type AuxServices interface {
	Has(name string) bool
	InitApp(ctx context.Context, service, app, user string, data []byte) error
	InitContainer(ctx context.Context, container, user string) error
	StopContainer(ctx context.Context, container, user string) error
	MetaData() map[string][]byte
}

// Service serves ContainerManagementProtocol.
type Service struct {
	client kubernetes.Interface
	opts   Options
}

// New returns the service.
func New(client kubernetes.Interface, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ClusterID == "" {
		opts.ClusterID = "weft"
	}
	return &Service{client: client, opts: opts}
}

// NodeID is this node's YARN NodeId.
func (s *Service) NodeID() string { return fmt.Sprintf("%s:%d", s.opts.NodeName, s.opts.Port) }

// Authenticator accepts the NMTokens of this node.
func (s *Service) Authenticator() ipc.TokenAuthenticator {
	return nmtokens.NodeAuthenticator{Keys: s.opts.Keys, NodeID: s.NodeID()}
}

// Service returns the ipc registration.
func (s *Service) Service() *ipc.Service {
	return &ipc.Service{Protocol: Protocol, Methods: map[string]ipc.Method{
		"startContainers":      ipc.Unary(s.startContainers),
		"stopContainers":       ipc.Unary(s.stopContainers),
		"getContainerStatuses": ipc.Unary(s.getContainerStatuses),
	}}
}

// caller is the attempt whose NMToken authenticated the connection.
func (s *Service) caller(ctx context.Context) (*nmtokens.NMTokenIdentity, error) {
	c := ipc.CallerFrom(ctx)
	if c == nil || c.Auth != ipc.AuthToken {
		return nil, ipc.Errorf(ipc.ClassAccessControlException, "ContainerManagementProtocol requires an NMToken")
	}
	return nmtokens.ParseNMToken(c.TokenIdentifier)
}

func serialized(err error) *yarnpb.SerializedExceptionProto {
	class, msg := ClassYarnException, err.Error()
	var re *ipc.RemoteError
	if errors.As(err, &re) {
		class, msg = re.Class, re.Message
	}
	return &yarnpb.SerializedExceptionProto{Message: proto.String(msg), ClassName: proto.String(class), Trace: proto.String(class + ": " + msg)}
}

func (s *Service) startContainers(ctx context.Context, req *yarnpb.StartContainersRequestProto) (*yarnpb.StartContainersResponseProto, error) {
	who, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	resp := &yarnpb.StartContainersResponseProto{}
	resp.ServicesMetaData = s.servicesMetaData()
	for _, r := range req.GetStartContainerRequest() {
		grant, err := s.opts.Keys.VerifyContainerToken(r.GetContainerToken(), s.NodeID())
		if err == nil && grant.Container.Attempt.App != who.Attempt.App {
			err = ipc.Errorf(ClassYarnException, "Unauthorized request to start container.\nNMToken for application attempt : %s was used for starting container with container token issued for application attempt : %s",
				who.Attempt, grant.Container.Attempt)
		}
		if err != nil {
			id := &yarnpb.ContainerIdProto{}
			if grant != nil {
				id = wire.ContainerID(grant.Container)
			}
			resp.FailedRequests = append(resp.FailedRequests, &yarnpb.ContainerExceptionMapProto{ContainerId: id, Exception: serialized(err)})
			continue
		}
		if err := s.registerServices(ctx, grant, r.GetContainerLaunchContext()); err != nil {
			resp.FailedRequests = append(resp.FailedRequests, &yarnpb.ContainerExceptionMapProto{
				ContainerId: wire.ContainerID(grant.Container), Exception: serialized(err)})
			continue
		}
		if err := s.start(ctx, who, grant, r.GetContainerLaunchContext()); err != nil {
			s.opts.Logger.Warn("start container failed", "container", grant.Container.String(), "err", err)
			resp.FailedRequests = append(resp.FailedRequests, &yarnpb.ContainerExceptionMapProto{
				ContainerId: wire.ContainerID(grant.Container), Exception: serialized(err)})
			continue
		}
		resp.SucceededRequests = append(resp.SucceededRequests, wire.ContainerID(grant.Container))
	}
	return resp, nil
}

// start creates the container's launch Secret and pod, bound to this node.
func (s *Service) start(ctx context.Context, who *nmtokens.NMTokenIdentity, g *nmtokens.ContainerGrant, clc *yarnpb.ContainerLaunchContextProto) error {
	name := translator.PodName(g.Container.String())
	if _, err := s.client.CoreV1().Pods(s.opts.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return ipc.Errorf(ClassYarnException, "Container %s already is running on this node!!", g.Container)
	}
	tokenFile := clc.GetTokens()
	if len(tokenFile) == 0 {
		b, err := credentials.New().Bytes()
		if err != nil {
			return err
		}
		tokenFile = b
	}
	owner := s.amPodOwner(ctx, g.Container.Attempt)
	labels := map[string]string{wellknown.LabelApp: g.Container.Attempt.App.String(), wellknown.LabelContainer: g.Container.String(),
		wellknown.LabelManagedBy: wellknown.ManagedByWeft, wellknown.LabelRM: s.opts.ClusterID}
	secret, local, err := translator.LaunchSecret(translator.SecretName(g.Container.String()), s.opts.Namespace, labels, tokenFile, clc)
	if err != nil {
		return err
	}
	if owner != nil {
		secret.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	env := map[string]string{}
	for _, kv := range clc.GetEnvironment() {
		env[kv.GetKey()] = kv.GetValue()
	}
	tier := cmp.Or(g.Tier, records.TierLow)
	pod, err := s.opts.Profile.Pod(translator.ContainerSpec{
		App: g.Container.Attempt.App.String(), Attempt: g.Container.Attempt.String(), Container: g.Container.String(),
		User: g.User, Queue: g.Queue, Tier: tier, MemoryMB: g.Resource.MemoryMB, VCores: g.Resource.VCores,
		Commands: clc.GetCommand(), Env: env, Runtime: s.opts.Runtime, LocalResources: local, NodeName: s.opts.NodeName,
		NMPort: s.opts.Port, NMHTTPPort: s.opts.HTTPPort, CredentialsSecret: secret.Name, RM: s.opts.ClusterID, Namespace: s.opts.Namespace, Owner: owner,
	})
	if err != nil {
		return err
	}
	if _, err := s.client.CoreV1().Secrets(s.opts.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create launch secret of %s: %w", g.Container, err)
	}
	if _, err := s.client.CoreV1().Pods(s.opts.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return ipc.Errorf(ClassYarnException, "Container %s already is running on this node!!", g.Container)
		}
		return fmt.Errorf("create pod of %s: %w", g.Container, err)
	}
	s.opts.Logger.Info("container started", "container", g.Container.String(), "pod", pod.Name, "tier", tier, "attempt", who.Attempt.String())
	return nil
}

// servicesMetaData is what StartContainers tells AMs of the node's
// auxiliary services (ShuffleHandler's port for MapReduce's AM).
func (s *Service) servicesMetaData() []*yarnpb.StringBytesMapProto {
	var md []*yarnpb.StringBytesMapProto
	if s.opts.Shuffle != nil {
		md = append(md, &yarnpb.StringBytesMapProto{Key: proto.String(shuffle.ServiceID), Value: shuffle.MetaData(s.opts.Shuffle.Port)})
	}
	if s.opts.AuxServices != nil {
		meta := s.opts.AuxServices.MetaData()
		names := make([]string, 0, len(meta))
		for name := range meta {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			md = append(md, &yarnpb.StringBytesMapProto{Key: proto.String(name), Value: meta[name]})
		}
	}
	return md
}

// registerServices hands the launch context's service data to the node's
// auxiliary services, as a NodeManager initializes them for the
// container's application (for each container: each may carry data of
// its own), then tells them of the container; data for a service this
// node lacks fails the start, as it does in YARN.
func (s *Service) registerServices(ctx context.Context, g *nmtokens.ContainerGrant, clc *yarnpb.ContainerLaunchContextProto) error {
	app := g.Container.Attempt.App.String()
	for _, kv := range clc.GetServiceData() {
		switch {
		case kv.GetKey() == shuffle.ServiceID && s.opts.Shuffle != nil:
			if err := s.opts.Shuffle.Register(app, g.User, kv.GetValue()); err != nil {
				return err
			}
		case s.opts.AuxServices != nil && s.opts.AuxServices.Has(kv.GetKey()):
			if err := s.opts.AuxServices.InitApp(ctx, kv.GetKey(), app, g.User, kv.GetValue()); err != nil {
				return auxError(kv.GetKey(), err)
			}
		default:
			return ipc.Errorf(ClassInvalidAuxService, "The auxService:%s does not exist", kv.GetKey())
		}
	}
	if s.opts.AuxServices != nil {
		if err := s.opts.AuxServices.InitContainer(ctx, g.Container.String(), g.User); err != nil {
			// A service's view of containers is advisory (Spark's only logs
			// it): the container starts.
			s.opts.Logger.Warn("auxiliary services not told of a container", "container", g.Container.String(), "err", err)
		}
	}
	return nil
}

// auxError is a service's failure to initialize an application as the
// AM sees it: the service's own exception where it threw one.
func auxError(service string, err error) error {
	var re interface{ JavaClass() (string, string) }
	if errors.As(err, &re) {
		class, msg := re.JavaClass()
		return ipc.Errorf(class, "%s", msg)
	}
	return ipc.Errorf(ClassYarnException, "auxService %s: %v", service, err)
}

// amPodOwner makes the attempt's AM pod the owner of its containers' pods,
// so that Kubernetes removes them with it, as YARN kills an attempt's
// containers when its AM ends. Unmanaged AMs have no pod.
func (s *Service) amPodOwner(ctx context.Context, attempt records.AttemptID) *metav1.OwnerReference {
	am := records.ContainerID{Attempt: attempt, ID: 1}
	pod, err := s.client.CoreV1().Pods(s.opts.Namespace).Get(ctx, translator.PodName(am.String()), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
}

// authorize checks that the caller's application owns a container.
func authorize(who *nmtokens.NMTokenIdentity, c records.ContainerID) error {
	if c.Attempt.App != who.Attempt.App {
		return ipc.Errorf(ClassYarnException, "Unauthorized request to %s container %s of another application", "access", c)
	}
	return nil
}

func (s *Service) stopContainers(ctx context.Context, req *yarnpb.StopContainersRequestProto) (*yarnpb.StopContainersResponseProto, error) {
	who, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	resp := &yarnpb.StopContainersResponseProto{}
	for _, p := range req.GetContainerId() {
		c := wire.ContainerIDOf(p)
		err := authorize(who, c)
		if err == nil {
			err = s.client.CoreV1().Pods(s.opts.Namespace).Delete(ctx, translator.PodName(c.String()), metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				err = ipc.Errorf(ClassYarnException, "Container %s is not handled by this NodeManager", c)
			}
		}
		if err != nil {
			resp.FailedRequests = append(resp.FailedRequests, &yarnpb.ContainerExceptionMapProto{ContainerId: p, Exception: serialized(err)})
			continue
		}
		if s.opts.AuxServices != nil {
			if err := s.opts.AuxServices.StopContainer(ctx, c.String(), who.User); err != nil {
				s.opts.Logger.Warn("auxiliary services not told of a container's end", "container", c.String(), "err", err)
			}
		}
		resp.SucceededRequests = append(resp.SucceededRequests, p)
	}
	return resp, nil
}

func (s *Service) getContainerStatuses(ctx context.Context, req *yarnpb.GetContainerStatusesRequestProto) (*yarnpb.GetContainerStatusesResponseProto, error) {
	who, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	resp := &yarnpb.GetContainerStatusesResponseProto{}
	for _, p := range req.GetContainerId() {
		c := wire.ContainerIDOf(p)
		err := authorize(who, c)
		var pod *corev1.Pod
		if err == nil {
			pod, err = s.client.CoreV1().Pods(s.opts.Namespace).Get(ctx, translator.PodName(c.String()), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				err = ipc.Errorf(ClassYarnException, "Container %s is not handled by this NodeManager", c)
			}
		}
		if err != nil {
			resp.FailedRequests = append(resp.FailedRequests, &yarnpb.ContainerExceptionMapProto{ContainerId: p, Exception: serialized(err)})
			continue
		}
		resp.Status = append(resp.Status, StatusOf(p, pod))
	}
	return resp, nil
}

// StatusOf is a container's YARN status read from its pod.
func StatusOf(id *yarnpb.ContainerIdProto, pod *corev1.Pod) *yarnpb.ContainerStatusProto {
	st := &yarnpb.ContainerStatusProto{ContainerId: id, State: yarnpb.ContainerStateProto_C_NEW.Enum(), Diagnostics: proto.String("")}
	// Any pod the id names is read, even one that is not a container's
	// (found by make fuzz-long: a pod without containers panicked here).
	if len(pod.Spec.Containers) > 0 {
		if q, ok := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; ok {
			st.Capability = &yarnpb.ResourceProto{Memory: proto.Int64(q.Value() >> 20)}
		}
	}
	code, diag, state := translator.PodOutcome(pod)
	switch state {
	case records.ContainerRunning:
		st.State = yarnpb.ContainerStateProto_C_RUNNING.Enum()
	case records.ContainerComplete:
		st.State = yarnpb.ContainerStateProto_C_COMPLETE.Enum()
		st.ExitStatus, st.Diagnostics = proto.Int32(code), proto.String(diag)
	}
	return st
}
