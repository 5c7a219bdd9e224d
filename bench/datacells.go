package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The data cells (-figures cells): what a data scientist's cells cost through repl-mcp
// against the same cells in a bare exec loop of the same interpreter, in the same
// rounds: a print-heavy loop, a carriage-return progress line, a groupby and a
// describe() of a million-row DataFrame with their values shown, and a figure drawn to
// PNG. The interpreter has the data libraries: -data-python, by default
// interop/.venv-data/bin/python.

// dataCell is one cell, as repl-mcp runs it and as the bare loop runs it.
type dataCell struct {
	name   string
	code   string
	bare   string  // the bare loop's code, when it differs (the figure: saved, not shown)
	target float64 // the ratio it should stay within; 0: none
}

// dataSetup runs once in each, untimed.
const dataSetup = `import io
import numpy as np, pandas as pd
import matplotlib
import matplotlib.pyplot as plt
rng = np.random.default_rng(0)
df = pd.DataFrame({'k': rng.integers(0, 100, 1_000_000), 'v': rng.random(1_000_000)})
x = np.linspace(0, 10, 2_000)`

const figureCode = `fig, ax = plt.subplots()
ax.plot(x, np.sin(x)); ax.set_title('sin')
`

var dataCells = []dataCell{
	{name: "for i in range(100_000): print(i)", code: "for i in range(100_000): print(i)", target: 1.5},
	{name: "2,000 print(f'\\r{i}', end='', flush=True)", code: "for i in range(2_000): print(f'\\r{i}', end='', flush=True)", target: 2},
	{name: "df.groupby('k').v.mean(), 1M rows, shown", code: "df.groupby('k').v.mean()", target: 1.1},
	{name: "df.describe(), 1M rows, shown", code: "df.describe()", target: 1.1},
	{name: "a line plot rendered to PNG", code: figureCode + "plt.show()",
		bare: figureCode + "fig.savefig(io.BytesIO(), format='png'); plt.close(fig)"},
}

// dataLoop is the bare baseline: Python as a script run with its stdout on /dev/null
// (block-buffered, as `python script.py > /dev/null` has it), execing each cell in one
// namespace and taking the repr of a trailing expression, as the interactive loop shows
// it; it answers on the pipe that was its stdout.
const dataLoop = `import ast, json, os, sys
answer = os.fdopen(os.dup(1), 'w')
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
sys.stdout = open(1, 'w', closefd=False)
ns = {'__name__': '__main__'}
for line in sys.stdin:
    tree = ast.parse(json.loads(line))
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, '<cell>', 'exec'), ns)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), '<cell>', 'eval'), ns)
        if value is not None:
            repr(value)
    sys.stdout.flush()
    answer.write('"ok"\n')
    answer.flush()
`

const (
	dataRounds      = 7
	dataCellTimeout = 60 * time.Second
)

// dataFigure is what the data cells measured: per cell, each round's time through
// repl-mcp and through the bare loop.
type dataFigure struct {
	python     string
	ours, bare [][]time.Duration // [cell][round]
	err        error
}

// defaultDataPython is the data venv's interpreter, relative to the checkout.
func defaultDataPython() string {
	return filepath.Join("interop", ".venv-data", "bin", "python")
}

func (b *bench) measureDataCells(ctx context.Context) (f dataFigure) {
	f.python = b.cfg.DataPython
	f.ours, f.bare = make([][]time.Duration, len(dataCells)), make([][]time.Duration, len(dataCells))
	if _, err := os.Stat(f.python); err != nil {
		f.err = fmt.Errorf("no interpreter with the data libraries (%v): run make data-deps, or give -data-python", err)
		return f
	}
	loop, err := startChild(ctx, "python data loop", b.dir, f.python, "-c", dataLoop)
	if err != nil {
		f.err = err
		return f
	}
	defer loop.stop()
	s, err := startServer(ctx, b.dir, b.cfg.Binary, f.python)
	if err != nil {
		f.err = err
		return f
	}
	defer b.stopServer(s, "data cells")
	if _, err := s.initialize(ctx); err != nil {
		f.err = err
		return f
	}
	if _, _, err := s.execute(ctx, dataSetup, dataCellTimeout); err != nil {
		f.err = fmt.Errorf("setup cell: %w", err)
		return f
	}
	if _, err := bareCell(ctx, loop, dataSetup); err != nil {
		f.err = fmt.Errorf("bare setup: %w", err)
		return f
	}
	// One untimed run of each first: imports and caches warm on both sides.
	for round := -1; round < dataRounds && ctx.Err() == nil; round++ {
		for i, cell := range dataCells {
			r, ours, err := s.execute(ctx, cell.code, dataCellTimeout)
			if err == nil && cell.bare != "" && !hasImage(r) {
				err = errors.New("no image in the result")
			}
			if err != nil {
				f.err = fmt.Errorf("%s: %w", cell.name, err)
				return f
			}
			code := cell.code
			if cell.bare != "" {
				code = cell.bare
			}
			bare, err := bareCell(ctx, loop, code)
			if err != nil {
				f.err = fmt.Errorf("%s, bare: %w", cell.name, err)
				return f
			}
			if round >= 0 {
				f.ours[i], f.bare[i] = append(f.ours[i], ours), append(f.bare[i], bare)
			}
		}
	}
	return f
}

func hasImage(r cellResult) bool {
	for _, c := range r.Content {
		if c.Type == "image" {
			return true
		}
	}
	return false
}

// bareCell runs code in the bare loop, timed from the write to the answer.
func bareCell(ctx context.Context, c *child, code string) (time.Duration, error) {
	line, _ := json.Marshal(code)
	deadline := time.Now().Add(dataCellTimeout)
	start := time.Now()
	if err := c.writeLine(ctx, line, deadline); err != nil {
		return 0, err
	}
	reply, err := c.readLine(ctx, deadline)
	took := time.Since(start)
	if err == nil && string(reply) != `"ok"` {
		err = fmt.Errorf("the loop answered %.200q", reply)
	}
	return took, err
}

// dataRows are one row a cell: the medians of both, and the median of the per-round
// ratios with their range (the rounds are interleaved, so a round's ratio is the fair one).
func (r *report) dataRows(f dataFigure) {
	for i, cell := range dataCells {
		x := row{figure: "data cell: " + cell.name + fmt.Sprintf(", median of %d", dataRounds), target: "-"}
		if cell.target > 0 {
			x.target = fmt.Sprintf("<= %gx", cell.target)
		}
		if f.err != nil || i >= len(f.ours) || len(f.ours[i]) == 0 {
			x.value = notMeasured(errors.Join(f.err, errors.New("no round")))
			r.rows = append(r.rows, fill(x))
			continue
		}
		ratios := durRatios(f.ours[i], f.bare[i])
		ratio := medianFloat(ratios)
		x.value, x.baseline = fmtDur(median(f.ours[i])), fmtDur(median(f.bare[i]))+" bare exec loop"
		x.ratio = ratioRange(ratios)
		if cell.target > 0 {
			x.met = yesNo(ratio <= cell.target)
		}
		r.rows = append(r.rows, fill(x))
	}
	if f.err == nil {
		r.notes = append(r.notes, fmt.Sprintf("data cells: on %s, each beside the same cell in a bare exec loop of it (stdout on /dev/null, a trailing value's repr taken), interleaved; the ratio is the median of the rounds' ratios, with their range", f.python))
	}
}
