package janitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/weft-sh/weft/translator/wellknown"
)

// RMWeb asks the ResourceManager's REST API
// (yarn.resourcemanager.webapp.address) for applications' states.
type RMWeb struct {
	// Address is host:port; with RM HA, every replica's, comma-separated
	// (yarn.resourcemanager.webapp.address.<rm-id>), asked in turn until
	// the active answers.
	Address string
	Client  *http.Client
}

// Ended implements Applications. An application the RM does not know
// (404) has ended: Weft's RM keeps every application it acknowledged.
func (w RMWeb) Ended(ctx context.Context, app string) (bool, error) {
	var errs []error
	for _, addr := range strings.Split(w.Address, ",") {
		ended, err := w.ask(ctx, strings.TrimSpace(addr), app)
		if err == nil {
			return ended, nil
		}
		// A standby (503) or a replica that is down: the next one.
		errs = append(errs, err)
	}
	return false, errors.Join(errs...)
}

func (w RMWeb) ask(ctx context.Context, addr, app string) (bool, error) {
	c := w.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	u := "http://" + addr + "/ws/v1/cluster/apps/" + url.PathEscape(app)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return true, nil
	default:
		return false, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var body struct {
		App struct{ State string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return false, fmt.Errorf("GET %s: %w", u, err)
	}
	switch body.App.State {
	case "FINISHED", "FAILED", "KILLED":
		return true, nil
	case "":
		return false, fmt.Errorf("GET %s: no application state", u)
	}
	return false, nil
}

// KubePods lists the node's pods of YARN applications.
type KubePods struct {
	Client    kubernetes.Interface
	Namespace string
	Node      string
}

// AppsOnNode implements Pods.
func (k KubePods) AppsOnNode(ctx context.Context) (map[string]bool, error) {
	list, err := k.Client.CoreV1().Pods(k.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: wellknown.LabelApp,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", k.Node).String(),
	})
	if err != nil {
		return nil, err
	}
	apps := map[string]bool{}
	for _, p := range list.Items {
		apps[p.Labels[wellknown.LabelApp]] = true
	}
	return apps, nil
}
