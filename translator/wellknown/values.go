package wellknown

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
)

// FormatTime writes a time word's value: RFC 3339, in UTC, to the second.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ParseTime reads a time word's value (FormatTime's).
func ParseTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("wellknown: %q is not an RFC 3339 time: %w", v, err)
	}
	return t, nil
}

// FormatCount writes a count word's value: a decimal integer.
func FormatCount(n int) string { return strconv.Itoa(n) }

// ParseCount reads a count word's value: a decimal integer, not negative.
func ParseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("wellknown: %q is not a count", v)
	}
	return n, nil
}

// TierOf reads a pod's tier from its labels (LabelTier).
func TierOf(labels map[string]string) (records.Tier, error) {
	v := labels[LabelTier]
	t, ok := records.ParseTier(v)
	if !ok {
		return 0, fmt.Errorf("wellknown: %s: %q is not a tier", LabelTier, v)
	}
	return t, nil
}

// HookRetry is an AnnotationTideHookRetry value: when the hooks of a
// node's move, having failed, are called again, and how many times in a
// row they failed: "2026-11-24T03:00:00Z,3".
type HookRetry struct {
	At       time.Time
	Failures int
}

func (h HookRetry) String() string { return FormatTime(h.At) + "," + FormatCount(h.Failures) }

// ParseHookRetry reads an AnnotationTideHookRetry value.
func ParseHookRetry(v string) (HookRetry, error) {
	at, count, ok := strings.Cut(v, ",")
	t, err := ParseTime(at)
	if err != nil || !ok {
		return HookRetry{}, fmt.Errorf("wellknown: %s: %q is not a time and a count", AnnotationTideHookRetry, v)
	}
	n, err := ParseCount(count)
	if err != nil {
		return HookRetry{}, fmt.Errorf("wellknown: %s: %w", AnnotationTideHookRetry, err)
	}
	return HookRetry{At: t, Failures: n}, nil
}

// HooksDone is an AnnotationTideHooksDone value: the hooks (by name) that
// answered for the move to State: "Offline:drain-dns,cmdb".
type HooksDone struct {
	State TideState
	Hooks []string
}

// String writes the hooks in order, so that an unchanged set is an
// unchanged annotation.
func (h HooksDone) String() string {
	hooks := slices.Sorted(slices.Values(h.Hooks))
	return string(h.State) + ":" + strings.Join(slices.Compact(hooks), ",")
}

// ParseHooksDone reads an AnnotationTideHooksDone value.
func ParseHooksDone(v string) (HooksDone, error) {
	state, names, ok := strings.Cut(v, ":")
	s, err := ParseTideState(state)
	if err != nil || !ok {
		return HooksDone{}, fmt.Errorf("wellknown: %s: %q is not a state and hooks", AnnotationTideHooksDone, v)
	}
	h := HooksDone{State: s}
	for _, name := range strings.Split(names, ",") {
		if name != "" {
			h.Hooks = append(h.Hooks, name)
		}
	}
	return h, nil
}
