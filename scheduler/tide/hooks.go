package tide

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
)

// HookCall is what a hook receives, as JSON in a POST.
type HookCall struct {
	Pool string             `json:"pool"`
	Node string             `json:"node"`
	From v1alpha1.NodeState `json:"from"`
	To   v1alpha1.NodeState `json:"to"`
}

// Caller calls hooks; Weft's is HTTPCaller.
type Caller interface {
	Call(ctx context.Context, h v1alpha1.Hook, call HookCall) error
}

// HTTPCaller POSTs the call to the hook's URL and wants a 2xx within the
// hook's timeout (default 10s).
type HTTPCaller struct{ Client *http.Client }

var _ Caller = HTTPCaller{}

func (c HTTPCaller) Call(ctx context.Context, h v1alpha1.Hook, call HookCall) error {
	timeout := 10 * time.Second
	if h.Timeout != nil && h.Timeout.Duration > 0 {
		timeout = h.Timeout.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, _ := json.Marshal(call)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("hook %s: %w", h.Name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("hook %s: %w", h.Name, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("hook %s answered %s: %s", h.Name, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// hooksFor are the hooks a move to s calls.
func hooksFor(hooks []v1alpha1.Hook, s v1alpha1.NodeState) []v1alpha1.Hook {
	var out []v1alpha1.Hook
	for _, h := range hooks {
		if len(h.States) == 0 || slices.Contains(h.States, s) {
			out = append(out, h)
		}
	}
	return out
}
