package sim

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WritePlots draws the day into dir as PNGs: CPU utilization per policy;
// for the last tidal policy, its nodes per tide state and its batch
// containers by tier; and every policy's kills so far. It returns the
// files' paths.
func WritePlots(dir string, rs []*Result) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string) error {
		path := filepath.Join(dir, name)
		if err := p.Save(9*vg.Inch, 4*vg.Inch, path); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, path)
		return nil
	}
	series := func(r *Result, v func(Sample) float64) plotter.XYs {
		xy := make(plotter.XYs, len(r.Samples))
		for i, s := range r.Samples {
			xy[i].X = s.At.Sub(r.Samples[0].At).Hours()
			xy[i].Y = v(s)
		}
		return xy
	}
	lines := func(title, y string, named []any) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "hour of the day"
		p.Y.Label.Text = y
		p.Legend.Top = true
		p.Legend.Left = true
		p.Add(plotter.NewGrid())
		return p, plotutil.AddLines(p, named...)
	}

	var named []any
	for _, r := range rs {
		named = append(named, string(r.Policy), series(r, func(s Sample) float64 { return s.CPU }))
	}
	p, err := lines("CPU utilization over the day", "% of the cluster's CPU", named)
	if err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, 100
	if err := save(p, "utilization.png"); err != nil {
		return nil, err
	}

	named = named[:0]
	for _, r := range rs {
		named = append(named, string(r.Policy), series(r, func(s Sample) float64 { return float64(s.Kills) }))
	}
	if p, err = lines("Batch containers killed so far", "containers", named); err != nil {
		return nil, err
	}
	if err := save(p, "kills.png"); err != nil {
		return nil, err
	}

	var tidal *Result
	for _, r := range rs {
		if r.Policy.tidal() {
			tidal = r
		}
	}
	if tidal == nil {
		return files, nil
	}
	named = named[:0]
	for i, st := range []string{"Online", "OnlineToOffline", "Offline", "OfflineToOnline"} {
		named = append(named, st, series(tidal, func(s Sample) float64 { return float64(s.Nodes[i]) }))
	}
	if p, err = lines("Nodes per tide state ("+string(tidal.Policy)+")", "nodes", named); err != nil {
		return nil, err
	}
	if err := save(p, "tide.png"); err != nil {
		return nil, err
	}
	named = named[:0]
	for i, tier := range []string{"low (elastic)", "medium (gang)", "high (AM)"} {
		named = append(named, tier, series(tidal, func(s Sample) float64 { return float64(s.Running[i]) }))
	}
	if p, err = lines("Batch containers running by tier ("+string(tidal.Policy)+")", "containers", named); err != nil {
		return nil, err
	}
	if err := save(p, "tiers.png"); err != nil {
		return nil, err
	}
	return files, nil
}
