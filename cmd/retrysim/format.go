package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// human formats d for people: at most three significant digits ("1.23s",
// "100ms", "1.6s"), and years, days or hours past a day, where Duration's
// own format ("8760h0m0s") stops being readable.
func human(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d >= 365*day:
		return strconv.FormatFloat(sig3(float64(d)/float64(365*day)), 'f', -1, 64) + " years"
	case d >= day:
		return strconv.FormatFloat(sig3(float64(d)/float64(day)), 'f', -1, 64) + " days"
	case d >= 10*time.Hour:
		return strconv.FormatFloat(sig3(float64(d)/float64(time.Hour)), 'f', -1, 64) + " hours"
	case d <= 0:
		return "0s"
	}
	unit := time.Duration(1)
	for d/unit >= 1000 {
		unit *= 10
	}
	return d.Round(unit).String()
}

// sig3 rounds x to three significant digits.
func sig3(x float64) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// fromMs converts milliseconds back to a Duration.
func fromMs(x float64) time.Duration {
	return time.Duration(math.Round(x * float64(time.Millisecond)))
}

// humanMs formats a number of milliseconds like human, and nil as "-".
func humanMs(x *float64) string {
	if x == nil {
		return "-"
	}
	return human(fromMs(*x))
}

// humanS formats a number of seconds like human, and nil as none.
func humanS(x *float64, none string) string {
	if x == nil {
		return none
	}
	return human(time.Duration(*x * float64(time.Second)))
}

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// report ends a command that simulated results: it draws the chart to path
// (none when path is empty), then prints results as JSON or, with table, as
// a table followed by where the chart went.
func report(o *output, path string, asJSON bool, results any, image func(path string) error, table func()) error {
	if path != "" {
		if err := image(path); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(o.stdout, results)
	}
	table()
	if path != "" {
		fmt.Fprintf(o.stdout, "\nwrote %s\n", path)
	}
	return nil
}

// percent formats a fraction as a percentage with one decimal.
func percent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
}
