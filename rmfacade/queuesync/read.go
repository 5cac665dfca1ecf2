package queuesync

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	k8srest "k8s.io/client-go/rest"

	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
	"github.com/weft-sh/weft/quota/crd"
)

// Read reads the Queue tree from the cluster, as YARN's view and as the
// objects: the tree the RM starts with, before its controllers run. It
// returns nils when the Queue API is not installed or holds no queues.
func Read(ctx context.Context, cfg *k8srest.Config) ([]quota.QueueConfig, []v1alpha1.Queue, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	list, err := client.Resource(v1alpha1.GroupVersion.WithResource("queues")).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list queues: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil, nil
	}
	queues := make([]v1alpha1.Queue, len(list.Items))
	for i, u := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &queues[i]); err != nil {
			return nil, nil, fmt.Errorf("queue %s: %w", u.GetName(), err)
		}
	}
	configs, err := crd.ConfigsFromQueues(queues)
	return configs, queues, err
}
