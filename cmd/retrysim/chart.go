package main

import (
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart images, drawn with gonum.org/v1/plot. The format follows the file
// name's extension: .svg (small, sharp, the one the README shows) or .png.

// imageFormat returns the vg format name for path, or "" if the extension is
// not one retrysim writes.
func imageFormat(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		return "svg"
	case ".png":
		return "png"
	}
	return ""
}

// imagePath checks the -out path before any simulation runs, so that a
// mistake in it costs no run: the extension must be .svg or .png, and its
// directory must exist and accept a new file (checked by creating and
// removing an empty temporary file there). It returns the absolute path, which
// the commands print after writing: under go -C cmd/retrysim a relative path
// is relative to cmd/retrysim, not to where the user typed it. An empty path
// means no image and is returned as it is.
func imagePath(out string) (string, error) {
	if out == "" {
		return "", nil
	}
	if imageFormat(out) == "" {
		return "", usagef("-out %q must end in .svg or .png", out)
	}
	path, err := filepath.Abs(out)
	if err != nil {
		return "", usagef("-out %q: %v", out, reason(err))
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return "", usagef("-out %q: %s is a directory", out, path)
	}
	dir := filepath.Dir(path)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return "", usagef("-out %q: there is no directory %s", out, dir)
	case err != nil:
		return "", usagef("-out %q: %s: %v", out, dir, reason(err))
	case !fi.IsDir():
		return "", usagef("-out %q: %s is not a directory", out, dir)
	}
	f, err := os.CreateTemp(dir, ".retrysim-*"+filepath.Ext(path))
	if err != nil {
		return "", usagef("-out %q: cannot create a file in %s: %v", out, dir, reason(err))
	}
	f.Close()
	os.Remove(f.Name())
	return path, nil
}

// reason returns what went wrong in err without the path it names, which
// the caller's message already gives.
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// palette gives each strategy the same color in every chart.
var palette = map[strategy]color.RGBA{
	none:         {0x7f, 0x7f, 0x7f, 0xff},
	constant:     {0x8c, 0x56, 0x4b, 0xff},
	exponential:  {0xd6, 0x27, 0x28, 0xff},
	full:         {0x1f, 0x77, 0xb4, 0xff},
	equal:        {0xff, 0x7f, 0x0e, 0xff},
	decorrelated: {0x2c, 0xa0, 0x2c, 0xff},
	smooth:       {0x94, 0x67, 0xbd, 0xff},
	fullBudget:   {0x17, 0xbe, 0xcf, 0xff},
	proportional: {0xbc, 0xbd, 0x22, 0xff},
}

// saveGrid draws plots, a grid of rows×cols (nil cells stay empty), on one
// canvas of the given size and writes it to path.
func saveGrid(path string, plots [][]*plot.Plot, w, h vg.Length) error {
	c, err := draw.NewFormattedCanvas(w, h, imageFormat(path))
	if err != nil {
		return err
	}
	tiles := draw.Tiles{
		Rows: len(plots), Cols: len(plots[0]),
		PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 3,
	}
	canvases := plot.Align(plots, tiles, draw.New(c))
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sans is the typeface of every chart; plot's default is a serif.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot returns a plot in sans-serif, small enough for a grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Typeface, f.Variant = sans.Typeface, sans.Variant
	}
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.X.Label.TextStyle.Font.Size = vg.Points(9)
	p.Y.Label.TextStyle.Font.Size = vg.Points(9)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	p.Y.Tick.Label.Font.Size = vg.Points(8)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return p
}

// herdImage draws one panel per strategy: the calls in each slice over time,
// with the outage shaded and the capacity as a dashed line. All panels share
// the axes; a panel whose spikes go off the top says how high they reach in
// its title. Long runs are drawn at most 800 points wide, each point the
// busiest slice it covers, so spikes survive the downsampling.
func herdImage(path string, cfg *herdConfig, results []herdResult) error {
	series := make([][]int, len(results))
	for i, r := range results {
		series[i] = r.series
	}
	n := max(longest(series), 1)
	step := (n + 799) / 800
	ymax := float64(max(3*cfg.capacity, 1))
	tallest := 0
	for _, s := range series {
		for _, v := range s {
			tallest = max(tallest, v)
		}
	}
	ymax = min(ymax, float64(tallest)*1.1)
	ymax = max(ymax, float64(cfg.capacity)*1.2, 1)
	xmax := (time.Duration(n) * cfg.slice).Seconds()

	plots := make([][]*plot.Plot, len(results))
	for i, r := range results {
		title := fmt.Sprintf("%s: %d calls, peak %d per slice after recovery, %s gave up",
			r.Strategy, r.Calls, r.Peak, percent(r.GaveUp))
		xLabel := ""
		if i == len(results)-1 {
			xLabel = "seconds since the outage began (shaded: the outage; dashed: capacity; spikes clipped at the top)"
		}
		p := newPlot(title, xLabel, fmt.Sprintf("calls / %v", cfg.slice))
		p.Title.TextStyle.Font.Size = vg.Points(9)

		outage, err := shaded(0, cfg.outage.Seconds(), 0, ymax)
		if err != nil {
			return err
		}

		pts := make(plotter.XYs, 0, n/step+1)
		for k := 0; k < len(r.series); k += step {
			v := 0
			for _, c := range r.series[k:min(k+step, len(r.series))] {
				v = max(v, c)
			}
			pts = append(pts, plotter.XY{X: (time.Duration(k) * cfg.slice).Seconds(), Y: float64(v)})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = palette[strategy(r.Strategy)]
		line.Width = vg.Points(0.8)
		line.FillColor = withAlpha(line.Color, 0x55)

		capLine, err := dashed(plotter.XYs{{X: 0, Y: float64(cfg.capacity)}, {X: xmax, Y: float64(cfg.capacity)}})
		if err != nil {
			return err
		}

		p.Add(outage, line, capLine)
		// After Add, which widens the axes to fit the data: spikes above
		// ymax are clipped, and the title gives their height.
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, xmax, 0, ymax
		plots[i] = []*plot.Plot{p}
	}
	return saveGrid(path, plots, 7*vg.Inch, vg.Length(len(results))*1.25*vg.Inch+0.3*vg.Inch)
}

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), a}
}

// shaded returns the rectangle [x0, x1] × [lo, hi], filled with the color
// that marks an outage or a trigger in every chart, without an outline.
func shaded(x0, x1, lo, hi float64) (*plotter.Polygon, error) {
	area, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: lo}, {X: x1, Y: lo}, {X: x1, Y: hi}, {X: x0, Y: hi}})
	if err != nil {
		return nil, err
	}
	area.Color = color.RGBA{0xf4, 0xd6, 0xd6, 0xff}
	area.LineStyle.Width = 0
	return area, nil
}

// dashed returns a thin dashed gray line through xys, as every chart draws
// a capacity or an ideal.
func dashed(xys plotter.XYs) (*plotter.Line, error) {
	line, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	line.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
	line.Width = vg.Points(0.6)
	line.Color = color.Gray{0x40}
	return line, nil
}

// addSeries adds xys to p as a line with a dot at each point, in col; with a
// name, it also enters the series in p's legend.
func addSeries(p *plot.Plot, xys plotter.XYs, col color.Color, name string) error {
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	line.Color, points.Color = col, col
	line.Width = vg.Points(1.2)
	points.Shape = draw.CircleGlyph{}
	points.Radius = vg.Points(2)
	p.Add(line, points)
	if name != "" {
		p.Legend.Add(name, line, points)
	}
	return nil
}

// chartStart returns the first second that the charts of overload and
// metastable show, in the terminal and in images: 10 s before the outage
// or the trigger, which begins at warmup, or 0.
func chartStart(warmup time.Duration) int {
	return max(int((warmup-10*time.Second)/bucket), 0)
}

// strategyRun is one strategy's series for timeChart, per second from 0:
// the calls that reached the server or dependency, the requests started
// and, of those, the ones that succeeded.
type strategyRun struct {
	name               string
	color              color.Color
	load               []int
	started, succeeded []int
}

// timeChart draws two panels over the seconds [from, to), the x axis in
// seconds since zero: the load per second of each run on a log scale
// (title and yLabel say what it counts) with the capacity as a dashed
// line through the points capacity, and the share of each second's
// requests that succeeded. The span [0, shade) seconds is shaded in both;
// values below ymin are drawn at ymin.
func timeChart(path, title, yLabel, xLabel string, from, to int, zero time.Duration, shade float64,
	capacity plotter.XYs, ymin float64, runs []strategyRun) error {
	load := newPlot(title, "", yLabel)
	good := newPlot("goodput: share of the requests started in each second that succeeded", xLabel, "%")
	load.Y.Scale, load.Y.Tick.Marker = plot.LogScale{}, ticks125{}
	x := func(k int) float64 { return (time.Duration(k)*bucket - zero).Seconds() }
	ymax := 0.0
	for _, c := range capacity {
		ymax = max(ymax, c.Y)
	}
	for _, r := range runs {
		for k := from; k < to && k < len(r.load); k++ {
			ymax = max(ymax, float64(r.load[k]))
		}
	}
	for _, p := range []struct {
		p        *plot.Plot
		lo, hi   float64
		capacity bool
	}{{load, ymin, ymax * 1.3, true}, {good, 0, 105, false}} {
		area, err := shaded(0, shade, p.lo, p.hi)
		if err != nil {
			return err
		}
		p.p.Add(area)
		if p.capacity {
			line, err := dashed(capacity)
			if err != nil {
				return err
			}
			p.p.Add(line)
		}
	}
	for _, r := range runs {
		lxy := make(plotter.XYs, 0, to-from)
		gxy := make(plotter.XYs, 0, to-from)
		for k := from; k < to; k++ {
			if k < len(r.load) {
				lxy = append(lxy, plotter.XY{X: x(k), Y: max(float64(r.load[k]), ymin)})
			}
			if k < len(r.started) && r.started[k] > 0 {
				gxy = append(gxy, plotter.XY{X: x(k), Y: 100 * float64(r.succeeded[k]) / float64(r.started[k])})
			}
		}
		for _, pl := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{load, lxy}, {good, gxy}} {
			line, err := plotter.NewLine(pl.xys)
			if err != nil {
				return err
			}
			line.Color = r.color
			line.Width = vg.Points(1.1)
			pl.p.Add(line)
			if pl.p == good {
				good.Legend.Add(r.name, line)
			}
		}
	}
	var ticks plot.ConstantTicks
	for t := math.Ceil(x(from)/10) * 10; t <= x(to); t += 10 {
		ticks = append(ticks, plot.Tick{Value: t, Label: strconv.FormatFloat(t, 'f', -1, 64)})
	}
	for _, p := range []*plot.Plot{load, good} {
		p.X.Min, p.X.Max = x(from), x(to)
		p.X.Tick.Marker = ticks
	}
	load.Y.Min, load.Y.Max = ymin, ymax*1.3
	good.Y.Min, good.Y.Max = 0, 105
	good.Legend.Top, good.Legend.Left = false, false
	good.Legend.YOffs = vg.Millimeter * 4
	return saveGrid(path, [][]*plot.Plot{{load}, {good}}, 8*vg.Inch, 6*vg.Inch)
}
