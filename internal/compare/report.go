package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/mdsafe"
	"github.com/servegate/servegate/internal/pipeline"
)

// A Result is a comparison's outcome.
type Result struct {
	Base, Head Side
	// Scenarios are the scenarios found, in the order they were.
	Scenarios []*ScenarioResult
	// Notes are remarks for every reader, such as servegate's version
	// changing between the sides.
	Notes []string
	// Err says why there is no verdict, "" when there is one.
	Err string
	// Interleaved is -mode interleaved's verdict: servegate gate's
	// report, which the reports then are.
	Interleaved *gate.Report
}

// A Side is base or head.
type Side struct {
	// Ref is the reference given ("" for the working tree); Commit its
	// commit, the working tree's HEAD for the working tree.
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	// Servegate is the servegate version the side's go.mod names.
	Servegate Version `json:"servegate"`
}

// A ScenarioResult is one scenario's verdict.
type ScenarioResult struct {
	Key Key
	// Verdict is the verdict; its State is Continue for a scenario not
	// judged.
	Verdict Verdict
	// NotJudged says why the scenario has no verdict: new in head, or a
	// scenario that does not pair.
	NotJudged string
	// TargetDiff lists how base's target differs from head's; BaseImage
	// and HeadImage are the images each side ran.
	TargetDiff           []string
	BaseImage, HeadImage string
	// Headroom is the largest share of a harness limit any of its runs
	// used (pipeline.Headroom).
	Headroom float64
	// TargetChanges are TargetDiff as fields, for the reports.
	TargetChanges []pipeline.TargetChange
	// Mode is how its pairs ran (pipeline.PairModes).
	Mode string
}

// Exit is the comparison's exit status: 1 when any scenario regressed,
// else 2 when any could not be judged or none was, else 0.
func (r *Result) Exit() int {
	if r.Err != "" {
		return 2
	}
	if r.Interleaved != nil {
		return r.Interleaved.ExitCode()
	}
	code, judged := 0, 0
	for _, s := range r.Scenarios {
		switch {
		case s.NotJudged != "":
			continue
		case s.Verdict.State == Regression:
			return 1
		case s.Verdict.State != Pass:
			code = 2
		}
		judged++
	}
	if judged == 0 {
		return 2
	}
	return code
}

// verdictWord says the exit status in words.
func verdictWord(exit int) string {
	return [...]string{"no regression", "regression", "cannot judge"}[exit]
}

func (r *Result) scenario(k Key) *ScenarioResult {
	for _, s := range r.Scenarios {
		if s.Key == k {
			return s
		}
	}
	s := &ScenarioResult{Key: k}
	r.Scenarios = append(r.Scenarios, s)
	return s
}

// noteNotReset adds a note, once per scenario and side, when a side's
// server began a run without emptying its prefix cache: a deployed
// server often offers no reset, and its runs may find earlier prompts
// cached.
func (r *Result) noteNotReset(k Key, rec *Record) {
	for _, side := range []struct {
		name string
		why  string
	}{{"base", rec.Base.NotReset}, {"head", rec.Head.NotReset}} {
		if side.why == "" {
			continue
		}
		head := fmt.Sprintf("%s: %s's server was not emptied of cached prompts before its runs: ", k.Name, side.name)
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, head) }) {
			r.Notes = append(r.Notes, head+side.why)
		}
	}
}

// howPaired says how the pairs ran.
func (r *Result) howPaired() string {
	modes := map[string]bool{}
	for _, s := range r.Scenarios {
		if s.Mode != "" {
			modes[s.Mode] = true
		}
	}
	switch {
	case len(modes) > 1:
		return "base and head run at the same time, or in turn where their servers would share the machine"
	case modes[pipeline.PairAlternate]:
		return "base and head run in turn, base first then head first (base, head, head, base), each server started for its run"
	}
	return "base and head run at the same time"
}

// changes are the ways the sides' targets differ: the scenario's
// target blocks, and the images the sides ran when the blocks do not
// say so already.
func (s *ScenarioResult) changes() []pipeline.TargetChange {
	cs := slices.Clone(s.TargetChanges)
	if len(cs) == 0 {
		// A record of another writer: its lines only.
		for _, l := range s.TargetDiff {
			cs = append(cs, pipeline.TargetChange{Key: l})
		}
	}
	named := slices.ContainsFunc(cs, func(c pipeline.TargetChange) bool { return c.Key == "target.image" })
	if s.BaseImage != s.HeadImage && !named {
		cs = append(cs, pipeline.TargetChange{Key: "image", Base: s.BaseImage, Head: s.HeadImage})
	}
	return cs
}

// targetLines are the lines that say how the sides' targets differ.
func (s *ScenarioResult) targetLines() []string {
	var lines []string
	for _, c := range s.changes() {
		if c.Base == "" && c.Head == "" && c.Note == "" && c.Flag == "" {
			lines = append(lines, c.Key)
			continue
		}
		lines = append(lines, c.String())
	}
	return lines
}

// changeMarkdown is one change as a list item's text, every name and
// value inert: target.args: head `--max-num-seqs 4` (base: `--max-num-seqs 8`).
func changeMarkdown(c pipeline.TargetChange) string {
	switch {
	case c.Note != "":
		return mdsafe.Code(c.Key) + ": " + mdsafe.Text(c.Note)
	case c.Base == "" && c.Head == "" && c.Flag == "":
		return mdsafe.Code(c.Key)
	}
	return fmt.Sprintf("%s: head %s (base: %s)", mdsafe.Code(c.Key), mdsafe.Code(c.HeadShown()), mdsafe.Code(c.BaseShown()))
}

// deployment groups the judged scenarios by how their targets differ,
// in the scenarios' order: what the reports print at their top.
func (r *Result) deployment() (groups []struct {
	names   []string
	changes []pipeline.TargetChange
	text    []string
}) {
	for _, s := range r.Scenarios {
		if s.NotJudged != "" {
			continue
		}
		lines := s.targetLines()
		if len(lines) == 0 {
			continue
		}
		found := false
		for i := range groups {
			if slices.Equal(groups[i].text, lines) {
				groups[i].names = append(groups[i].names, s.Key.Name)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, struct {
				names   []string
				changes []pipeline.TargetChange
				text    []string
			}{[]string{s.Key.Name}, s.changes(), lines})
		}
	}
	return groups
}

// short is a commit hash's first 12 digits.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// header says what was compared with what.
func (r *Result) header() string {
	return fmt.Sprintf("base %s (%s), head %s (%s)", short(r.Base.Commit), r.Base.Ref, short(r.Head.Commit), orWorkingTree(r.Head.Ref))
}

// WriteText writes the verdict as text: a block per scenario, then the
// verdict.
func (r *Result) WriteText(w io.Writer) error {
	if r.Interleaved != nil && r.Err == "" {
		if _, err := fmt.Fprintf(w, "servegate compare -mode interleaved: %s\n", r.header()); err != nil {
			return err
		}
		return r.Interleaved.WriteText(w)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "servegate compare: %s\n", r.header())
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, g := range r.deployment() {
		fmt.Fprintf(&b, "target differs in %s:\n", strings.Join(g.names, ", "))
		for _, l := range g.text {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	for _, s := range r.Scenarios {
		if s.NotJudged != "" {
			fmt.Fprintf(&b, "\n== %s: not judged: %s\n", s.Key, s.NotJudged)
			continue
		}
		v := s.Verdict
		fmt.Fprintf(&b, "\n== %s: %s after %d pair(s): %s\n", s.Key, v.State, v.Pairs, v.Reason)
		if v.Text != "" {
			b.WriteString(strings.TrimRight(v.Text, "\n") + "\n")
		}
	}
	exit := r.Exit()
	if r.Err != "" {
		fmt.Fprintf(&b, "\nno verdict: %s\n", r.Err)
	}
	fmt.Fprintf(&b, "\nverdict: %s (exit %d)\n", verdictWord(exit), exit)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the verdict as Markdown for the job summary and
// the pull request comment.
func (r *Result) WriteMarkdown(w io.Writer) error {
	if r.Interleaved != nil && r.Err == "" {
		return r.Interleaved.WriteMarkdown(w)
	}
	var b strings.Builder
	exit := r.Exit()
	icon := [...]string{"✅", "❌", "⚠️"}[exit]
	fmt.Fprintf(&b, "## %s servegate: %s (exit %d)\n\n", icon, verdictWord(exit), exit)
	fmt.Fprintf(&b, "Base `%s` (%s) against head `%s` (%s): %s, pair after pair, until each scenario's verdict ends.\n\n",
		short(r.Base.Commit), mdsafe.Text(r.Base.Ref), short(r.Head.Commit), mdsafe.Text(orWorkingTree(r.Head.Ref)), r.howPaired())
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "> %s\n\n", mdsafe.Text(n))
	}
	if groups := r.deployment(); len(groups) > 0 {
		b.WriteString("The target differs between base and head:\n\n")
		for _, g := range groups {
			names := make([]string, len(g.names))
			for i, n := range g.names {
				names[i] = mdsafe.Code(n)
			}
			fmt.Fprintf(&b, "- %s:\n", strings.Join(names, ", "))
			for _, c := range g.changes {
				fmt.Fprintf(&b, "  - %s\n", changeMarkdown(c))
			}
		}
		b.WriteString("\n")
	}
	if r.Err != "" {
		fmt.Fprintf(&b, "**No verdict:**\n\n~~~\n%s\n~~~\n\n", strings.ReplaceAll(r.Err, "~~~", "~ ~ ~"))
	}
	b.WriteString("| scenario | verdict | pairs | why |\n| --- | --- | --- | --- |\n")
	for _, s := range r.Scenarios {
		if s.NotJudged != "" {
			fmt.Fprintf(&b, "| %s | not judged | 0 | %s |\n", mdsafe.Cell(s.Key.String()), mdsafe.Text(s.NotJudged))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", mdsafe.Cell(s.Key.String()), s.Verdict.State, s.Verdict.Pairs, mdsafe.Text(s.Verdict.Reason))
	}
	for _, s := range r.Scenarios {
		if s.NotJudged != "" {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n", mdsafe.Code(s.Key.String()))
		b.WriteString(strings.TrimRight(s.Verdict.Markdown, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonReport is gate.json's shape.
type jsonReport struct {
	Exit      int            `json:"exit"`
	Verdict   string         `json:"verdict"`
	Base      Side           `json:"base"`
	Head      Side           `json:"head"`
	Notes     []string       `json:"notes,omitempty"`
	Error     string         `json:"error,omitempty"`
	Scenarios []jsonScenario `json:"scenarios"`
}

type jsonScenario struct {
	Name       string   `json:"name"`
	Package    string   `json:"package"`
	Verdict    string   `json:"verdict"`
	Pairs      int      `json:"pairs"`
	Reason     string   `json:"reason"`
	TargetDiff []string `json:"target_diff,omitempty"`
	BaseImage  string   `json:"base_image,omitempty"`
	HeadImage  string   `json:"head_image,omitempty"`
}

// WriteJSON writes the verdict as JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	// servegate gate -merge reads a sharded suite's interleaved reports.
	if r.Interleaved != nil && r.Err == "" {
		return r.Interleaved.WriteJSON(w)
	}
	exit := r.Exit()
	rep := jsonReport{Exit: exit, Verdict: verdictWord(exit), Base: r.Base, Head: r.Head, Notes: r.Notes, Error: r.Err, Scenarios: []jsonScenario{}}
	for _, s := range r.Scenarios {
		js := jsonScenario{Name: s.Key.Name, Package: filepath.ToSlash(s.Key.Pkg), Verdict: s.Verdict.State.String(), Pairs: s.Verdict.Pairs,
			Reason: s.Verdict.Reason, TargetDiff: s.TargetDiff, BaseImage: s.BaseImage, HeadImage: s.HeadImage}
		if s.NotJudged != "" {
			js.Verdict, js.Reason = "not judged", s.NotJudged
		}
		rep.Scenarios = append(rep.Scenarios, js)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// write writes gate.txt, gate.md and gate.json under out.
func (r *Result) write(out string) error {
	for name, fn := range map[string]func(io.Writer) error{"gate.txt": r.WriteText, "gate.md": r.WriteMarkdown, "gate.json": r.WriteJSON} {
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			return err
		}
		err = fn(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// addBenchfmt appends each process's benchfmt files of a round to
// base.benchfmt and head.benchfmt under out.
func addBenchfmt(out string, recs []*Record) error {
	seen := map[string]bool{}
	for _, rec := range recs {
		if seen[rec.Dir] {
			continue
		}
		seen[rec.Dir] = true
		for src, dst := range map[string]string{"bench-base.benchfmt": "base.benchfmt", "bench.benchfmt": "head.benchfmt"} {
			data, err := os.ReadFile(filepath.Join(rec.Dir, src))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return err
			}
			// A benchfmt key holds until a later line changes it: clear
			// the run markers before each process's lines.
			if err := appendFile(filepath.Join(out, dst), append([]byte("interrupted:\ninvalid:\n"), data...)); err != nil {
				return err
			}
		}
	}
	return nil
}

func appendFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
