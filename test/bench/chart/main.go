// Command chart draws the benchmarks' time by payload size, one line per
// tool, from the JSON that test/bench writes:
//
//	go run . -in bin/bench-results.json -out docs/benchmarks-size.png
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

type sample struct {
	Seconds float64 `json:"seconds"`
	Err     string  `json:"error"`
}

type input struct {
	Date    string                         `json:"date"`
	Sizes   []int                          `json:"sizes"`
	Samples map[string]map[string][]sample `json:"samples"`
}

// tools in legend order, with their colours.
var tools = []struct {
	name  string
	color color.RGBA
}{
	{"raw", color.RGBA{R: 90, G: 90, B: 90, A: 255}},
	{"raw-apply", color.RGBA{R: 160, G: 160, B: 160, A: 255}},
	{"payload-applier", color.RGBA{R: 214, G: 39, B: 40, A: 255}},
	{"kapp", color.RGBA{R: 31, G: 119, B: 180, A: 255}},
	{"kubectl", color.RGBA{R: 44, G: 160, B: 44, A: 255}},
}

func main() {
	in := flag.String("in", "", "results JSON")
	out := flag.String("out", "", "PNG to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var res input
	if err := json.Unmarshal(data, &res); err != nil {
		return err
	}
	sizes := append([]int(nil), res.Sizes...)
	sort.Ints(sizes)
	install, err := panel(res, sizes, "install", "Install of a generated mixed-kind payload")
	if err != nil {
		return err
	}
	resync, err := panel(res, sizes, "resync", "No-op resync of the same payload")
	if err != nil {
		return err
	}
	const w, h = 12 * vg.Inch, 5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{{install, resync}}, tiles, dc)
	install.Draw(canvases[0][0])
	resync.Draw(canvases[0][1])
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	png := vgimg.PngCanvas{Canvas: img}
	if _, err := png.WriteTo(f); err != nil {
		return err
	}
	return f.Close()
}

// panel plots the median seconds of step ("install" or "resync") by size.
func panel(res input, sizes []int, step, title string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "manifests"
	p.Y.Label.Text = "seconds (median)"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	var ticks []plot.Tick
	for _, s := range sizes {
		ticks = append(ticks, plot.Tick{Value: float64(s), Label: fmt.Sprint(s)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = 0
	for _, t := range tools {
		var pts plotter.XYs
		for _, size := range sizes {
			id := fmt.Sprintf("mixed-%d-%s", size, step)
			if v, ok := medianOK(res.Samples[id][t.name]); ok {
				pts = append(pts, plotter.XY{X: float64(size), Y: v})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = t.color, t.color
		line.Width = vg.Points(2)
		p.Add(line, points)
		p.Legend.Add(t.name, line, points)
	}
	return p, nil
}

func medianOK(samples []sample) (float64, bool) {
	var v []float64
	for _, s := range samples {
		if s.Err == "" {
			v = append(v, s.Seconds)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}
