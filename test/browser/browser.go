// Package browser drives a headless Chromium for tests that must see a
// page as a person does.
//
// Weft's web UI is server-rendered HTML and one stylesheet. A test that
// reads the HTML source proves what the server sent, not what a user sees:
// whether the stylesheet loaded, whether a queue's bar has the width its
// numbers say, whether a table fits. Those are facts of the rendered DOM,
// so they are proven in a real browser: Debian's chromium package, run
// headless, driven over the DevTools protocol by chromedp. Every check is
// evaluated in the page (innerText, attributes, getBoundingClientRect),
// and Screenshot keeps a picture of what was checked.
//
// A Browser is one chromium process; each Visit opens its own tab, so a
// Page stays valid until it is closed or its Browser is.
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// ErrNotFound is wrapped by Open when Options.ExecPath is empty and no
// chromium is on PATH: a test may skip on it.
var ErrNotFound = errors.New("no chromium on PATH (looked for chromium, chromium-browser): install Debian's package chromium (apt-get install chromium)")

// Default window size, in CSS pixels.
const (
	DefaultWidth  = 1280
	DefaultHeight = 900
)

// Options configures Open. Zero values take the defaults of each field.
type Options struct {
	// ExecPath is the chromium binary (default: chromium, else
	// chromium-browser, on PATH).
	ExecPath string
	// Width and Height are the window's size in CSS pixels (default
	// 1280×900). Headless chromium draws a window frame of its own, so the
	// viewport is Width wide and somewhat less than Height high (757 of
	// 900 with chromium 156). A full-page screenshot is Width wide and as
	// tall as the page.
	Width, Height int
}

// Browser is a headless chromium.
type Browser struct {
	// ctx is the browser's first tab; every Visit opens a tab beside it.
	ctx         context.Context
	cancel      context.CancelFunc
	allocCancel context.CancelFunc
	out         *tail
	closeOnce   sync.Once
	closeErr    error
}

// Open starts a headless chromium with the flags it needs as root in a
// container (--no-sandbox, --disable-gpu, --headless=new) and a fixed
// window size. ctx bounds the start only; the browser runs until Close.
func Open(ctx context.Context, opts Options) (*Browser, error) {
	path, err := findChromium(opts.ExecPath)
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	if opts.Width <= 0 {
		opts.Width = DefaultWidth
	}
	if opts.Height <= 0 {
		opts.Height = DefaultHeight
	}
	out := &tail{max: 4 << 10}
	allocOpts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(opts.Width, opts.Height),
		chromedp.CombinedOutput(out),
	)
	// The browser lives until Close, not until ctx ends.
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.WithoutCancel(ctx), allocOpts...)
	bctx, cancel := chromedp.NewContext(allocCtx)
	b := &Browser{ctx: bctx, cancel: cancel, allocCancel: allocCancel, out: out}
	// The first Run starts the process and binds it to bctx; ctx only
	// cuts the start short.
	stop := context.AfterFunc(ctx, allocCancel)
	err = chromedp.Do(bctx)
	if !stop() || err != nil {
		b.Close()
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, fmt.Errorf("browser: start %s: %w%s", path, err, out.quote(err))
	}
	return b, nil
}

// findChromium is the binary to run: path, or chromium or
// chromium-browser on PATH.
func findChromium(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("chromium at %s: %w", path, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// Close stops the browser and its tabs and waits until the process has
// exited and its profile directory is removed. It is safe to call more
// than once.
func (b *Browser) Close() error {
	b.closeOnce.Do(func() {
		// Ask chromium to close, then stop whatever is left: allocCancel
		// kills the process if it did not exit and waits for it.
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		err := chromedp.Cancel(ctx)
		cancel()
		b.cancel()
		b.allocCancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			b.closeErr = fmt.Errorf("browser: close: %w", err)
		}
	})
	return b.closeErr
}

// Page is a document loaded in its own tab. Its methods must not be
// called concurrently.
type Page struct {
	// URL is the document's URL, after redirects.
	URL string
	// Status is the HTTP status of the main document.
	Status int

	ctx    context.Context
	cancel context.CancelFunc
}

// Visit opens url in a new tab, waits until the document has loaded, its
// body is ready and its fonts are in, and returns the page. The main
// document's status must be 2xx, or, when want is given, one of want (a
// test visits a 404 page with Visit(ctx, url, 404)); otherwise Visit
// fails with the URL and the status.
func (b *Browser) Visit(ctx context.Context, url string, want ...int) (*Page, error) {
	tab, cancel := chromedp.NewContext(b.ctx)
	ok := false
	defer func() {
		if !ok {
			cancel()
		}
	}()
	// A tab's first Run attaches it and binds it to tab: ctx can only
	// cut that short.
	stop := context.AfterFunc(ctx, cancel)
	err := chromedp.Do(tab)
	if !stop() || err != nil {
		return nil, fmt.Errorf("browser: open a tab for %s: %w", url, cause(ctx, err))
	}
	p := &Page{URL: url, ctx: tab, cancel: cancel}
	resp, err := run(ctx, tab, chromedp.NavigateResponse(url))
	if err != nil {
		return nil, fmt.Errorf("browser: GET %s: %w", url, err)
	}
	if resp == nil {
		return nil, fmt.Errorf("browser: GET %s: no response for the main document", url)
	}
	p.URL, p.Status = resp.URL, int(resp.Status)
	if !statusOK(p.Status, want) {
		expect := "2xx"
		if len(want) > 0 {
			expect = fmt.Sprint(want)
		}
		return nil, fmt.Errorf("browser: GET %s: status %d %s, want %s", url, p.Status, resp.StatusText, expect)
	}
	if _, err := run(ctx, tab, chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		return nil, fmt.Errorf("browser: GET %s: wait for the body: %w", url, err)
	}
	if err := p.eval(ctx, `document.fonts.ready.then(() => true)`, nil); err != nil {
		return nil, fmt.Errorf("browser: GET %s: wait for fonts: %w", url, err)
	}
	ok = true
	return p, nil
}

func statusOK(status int, want []int) bool {
	if len(want) == 0 {
		return status >= 200 && status < 300
	}
	for _, w := range want {
		if status == w {
			return true
		}
	}
	return false
}

// Close closes the page's tab.
func (p *Page) Close() { p.cancel() }

// Eval evaluates the JavaScript expression js in the page, awaits it if it
// is a promise, and decodes its JSON value into out (nil discards it).
func (p *Page) Eval(ctx context.Context, js string, out any) error {
	if err := p.eval(ctx, js, out); err != nil {
		return fmt.Errorf("browser: eval on %s: %w", p.URL, err)
	}
	return nil
}

func (p *Page) eval(ctx context.Context, js string, out any) error {
	raw, err := run(ctx, p.ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if len(raw) == 0 {
		return fmt.Errorf("the expression is undefined: %.200s", js)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode %.200s: %w", raw, err)
	}
	return nil
}

// Texts is the rendered text (innerText) of each element that matches the
// CSS selector, in document order; none is an empty slice.
func (p *Page) Texts(ctx context.Context, selector string) ([]string, error) {
	var texts []string
	if err := p.eval(ctx, `Array.from(document.querySelectorAll(`+jsString(selector)+`), e => e.innerText)`, &texts); err != nil {
		return nil, fmt.Errorf("browser: texts of %s on %s: %w", selector, p.URL, err)
	}
	return texts, nil
}

// Count is how many elements match the CSS selector.
func (p *Page) Count(ctx context.Context, selector string) (int, error) {
	var n int
	if err := p.eval(ctx, `document.querySelectorAll(`+jsString(selector)+`).length`, &n); err != nil {
		return 0, fmt.Errorf("browser: count of %s on %s: %w", selector, p.URL, err)
	}
	return n, nil
}

// Attr is the attribute attr of the first element that matches the CSS
// selector; it is an error that no element matches or that it lacks the
// attribute.
func (p *Page) Attr(ctx context.Context, selector, attr string) (string, error) {
	var r struct {
		Found, Has bool
		Value      string
	}
	js := `(() => { const e = document.querySelector(` + jsString(selector) + `);
		return e ? {Found: true, Has: e.hasAttribute(` + jsString(attr) + `), Value: e.getAttribute(` + jsString(attr) + `) || ""} : {Found: false}; })()`
	if err := p.eval(ctx, js, &r); err != nil {
		return "", fmt.Errorf("browser: attribute %s of %s on %s: %w", attr, selector, p.URL, err)
	}
	switch {
	case !r.Found:
		return "", fmt.Errorf("browser: attribute %s of %s on %s: no element matches", attr, selector, p.URL)
	case !r.Has:
		return "", fmt.Errorf("browser: attribute %s of %s on %s: the element has no such attribute", attr, selector, p.URL)
	}
	return r.Value, nil
}

// Screenshot writes a PNG of the whole page, beyond the window's height,
// to path.
func (p *Page) Screenshot(ctx context.Context, path string) error {
	png, err := run(ctx, p.ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		return fmt.Errorf("browser: screenshot of %s: %w", p.URL, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("browser: screenshot of %s: %w", p.URL, err)
	}
	return nil
}

// run runs a on the tab, for as long as ctx allows. The tab outlives ctx:
// a derived context is what ctx's end cancels.
func run[T any](ctx, tab context.Context, a chromedp.Action[T]) (T, error) {
	actx, cancel := context.WithCancel(tab)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	v, err := chromedp.Run(actx, a)
	return v, cause(ctx, err)
}

// cause is err, or what ended ctx when it did.
func cause(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// tail keeps the last max bytes chromium printed, quoted in start errors.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// quote is what chromium printed last, as a suffix for err, unless err
// already quotes it.
func (t *tail) quote(err error) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := strings.TrimSpace(string(bytes.ToValidUTF8(t.buf, nil))); s != "" && !strings.Contains(err.Error(), s) {
		return "; chromium printed:\n" + s
	}
	return ""
}
