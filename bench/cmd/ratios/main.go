// Command ratios reads benchstat's CSV output for the comparison benchmarks
// on standard input and prints, for each benchmark, a Markdown table of every
// library's medians with their ratio to the floor: the hand-written loop
// (lib=loop), or the bare client (lib=bare) for the HTTP rows.
//
// A ratio whose floor is zero prints as "=" when the value is zero too, and
// as "—" otherwise. Rows and columns keep the order of benchstat's output.
package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// floors are the libraries a ratio is taken to, the first present wins.
var floors = []string{"loop", "bare"}

// row is a benchmark result name such as "Success/lib=retry-2".
var row = regexp.MustCompile(`^(.+)/lib=(.+?)(-\d+)?$`)

// bench holds the medians of one benchmark: by unit, then by library.
type bench struct {
	name   string
	units  []string
	libs   []string
	median map[string]map[string]float64
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("ratios: ")
	benches, err := parse(os.Stdin)
	if err != nil {
		log.Fatal(err)
	}
	for i, b := range benches {
		if i > 0 {
			fmt.Println()
		}
		b.print(os.Stdout)
	}
}

// parse reads benchstat's CSV: blocks of a file line, a unit line
// (",unit,CI") and result lines ("name,median,CI"), one block per unit.
func parse(r io.Reader) ([]*bench, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	var (
		benches []*bench
		byName  = map[string]*bench{}
		unit    string
	)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return benches, nil
		}
		if err != nil {
			return nil, err
		}
		if len(rec) < 2 {
			continue
		}
		if rec[0] == "" {
			if len(rec) >= 3 && rec[2] == "CI" {
				unit = rec[1]
			}
			continue
		}
		m := row.FindStringSubmatch(rec[0])
		if m == nil || unit == "" {
			continue // geomean and anything else that is not a library's row
		}
		v, err := strconv.ParseFloat(rec[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", rec[0], unit, err)
		}
		b := byName[m[1]]
		if b == nil {
			b = &bench{name: m[1], median: map[string]map[string]float64{}}
			byName[m[1]] = b
			benches = append(benches, b)
		}
		if b.median[unit] == nil {
			b.median[unit] = map[string]float64{}
			b.units = append(b.units, unit)
		}
		if !slices.Contains(b.libs, m[2]) {
			b.libs = append(b.libs, m[2])
		}
		b.median[unit][m[2]] = v
	}
}

// print writes b as a Markdown table.
func (b *bench) print(w io.Writer) {
	floor := ""
	for _, f := range floors {
		if slices.Contains(b.libs, f) {
			floor = f
			break
		}
	}
	head := []string{b.name}
	for _, u := range b.units {
		head = append(head, u, "× "+floor)
	}
	fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat(" --- |", len(head)))
	for _, lib := range b.libs {
		cells := []string{"lib=" + lib}
		for _, u := range b.units {
			v, ok := b.median[u][lib]
			if !ok {
				cells = append(cells, "", "")
				continue
			}
			f, hasFloor := b.median[u][floor]
			cells = append(cells, format(v, u), ratio(v, f, hasFloor))
		}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

// format prints v in unit u to three significant digits, with times (units
// sec/op and benchstat's -sec metrics, such as p50-sec) in ns, µs or ms, and
// bytes from B/op on in KiB or MiB.
func format(v float64, u string) string {
	switch {
	case u == "B/op" && v >= 1<<20:
		return sig(v/(1<<20)) + " MiB"
	case u == "B/op" && v >= 1<<10:
		return sig(v/(1<<10)) + " KiB"
	case u == "sec/op" || strings.HasSuffix(u, "-sec"):
		switch ns := v * 1e9; {
		case ns >= 1e6:
			return sig(ns/1e6) + " ms"
		case ns >= 1e3:
			return sig(ns/1e3) + " µs"
		default:
			return sig(ns) + " ns"
		}
	}
	return sig(v)
}

// sig formats v to three significant digits, without an exponent, and a
// whole number without decimals.
func sig(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	digits := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	if r := math.Round(v*math.Pow10(digits)) / math.Pow10(digits); math.Abs(r) >= math.Pow10(3-digits) {
		digits-- // v rounds up to the next power of ten, as 0.9998 does to 1.00
	}
	return strconv.FormatFloat(v, 'f', max(digits, 0), 64)
}

// ratio formats v/floor.
func ratio(v, floor float64, ok bool) string {
	switch {
	case !ok:
		return ""
	case floor == 0 && v == 0:
		return "="
	case floor == 0:
		return "—"
	}
	return sig(v/floor) + "×"
}
