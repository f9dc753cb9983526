package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Charts drawn with text, for the terminal report of each command.

// blocks are the eight heights of a sparkline, after a blank for zero.
var blocks = []rune(" ▁▂▃▄▅▆▇█")

// sparkRows draws one sparkline per series, all on the same time axis and
// the same logarithmic scale: each of at most width columns shows the largest
// value among the points it covers. A caret under the axis marks the point
// mark (if it is in range), described by markLabel.
func sparkRows(w io.Writer, labels []string, series [][]int, width, mark int, markLabel string) {
	sparkRowsScaled(w, labels, series, width, mark, markLabel, level)
}

// sparkRowsScaled is sparkRows with the scale given by level, which maps a
// value in [0, top] to a height in [0, 8].
func sparkRowsScaled(w io.Writer, labels []string, series [][]int, width, mark int, markLabel string, level func(v, top int) int) {
	n := longest(series)
	if n == 0 {
		fmt.Fprintln(w, "(no calls)")
		return
	}
	cols := min(width, n)
	top := 0
	for _, s := range series {
		for _, v := range s {
			top = max(top, v)
		}
	}
	pad := 0
	for _, l := range labels {
		pad = max(pad, len(l))
	}
	for i, s := range series {
		var b strings.Builder
		for c := range cols {
			v := 0
			for k := c * n / cols; k < (c+1)*n/cols && k < len(s); k++ {
				v = max(v, s[k])
			}
			b.WriteRune(blocks[level(v, top)])
		}
		fmt.Fprintf(w, "%-*s │%s│\n", pad, labels[i], b.String())
	}
	if mark >= 0 && mark < n {
		col := mark * cols / n
		fmt.Fprintf(w, "%-*s  %s^ %s\n", pad, "", strings.Repeat(" ", col), markLabel)
	}
}

// level maps v in [0, top] to a block height on a log scale: 0 only for 0,
// 8 for top.
func level(v, top int) int {
	switch {
	case v <= 0:
		return 0
	case top <= 1 || v >= top:
		return 8
	}
	return 1 + int(7*math.Log(float64(v))/math.Log(float64(top)))
}

// linearLevel maps v in [0, top] to a block height on a linear scale: 0
// only for 0, at least 1 for any other value, 8 for top.
func linearLevel(v, top int) int {
	switch {
	case v <= 0:
		return 0
	case v >= top:
		return 8
	}
	return max(1, int(math.Round(8*float64(v)/float64(top))))
}

// bar returns a horizontal bar of v on a linear scale where top fills width
// cells, with eighths of a cell at the end.
func bar(v, top float64, width int) string {
	if top <= 0 || v <= 0 {
		return ""
	}
	eighths := int(math.Round(v / top * float64(width*8)))
	var b strings.Builder
	b.WriteString(strings.Repeat("█", eighths/8))
	if r := eighths % 8; r > 0 {
		b.WriteRune([]rune(" ▏▎▍▌▋▊▉")[r])
	}
	return b.String()
}
