package server

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
)

// queuesFromKubernetes reads the Queue tree from the cluster. It returns
// nil when the Queue API is not installed or holds no queues.
func queuesFromKubernetes(ctx context.Context, cfg *k8srest.Config) ([]quota.QueueConfig, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	list, err := client.Resource(v1alpha1.GroupVersion.WithResource("queues")).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	queues := make([]v1alpha1.Queue, len(list.Items))
	for i, u := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &queues[i]); err != nil {
			return nil, fmt.Errorf("queue %s: %w", u.GetName(), err)
		}
	}
	return quota.ConfigsFromQueues(queues)
}
