package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servegate/servegate/internal/metrics"
)

// This file is a small argparse work-alike. Go's flag package cannot take
// the multi-valued options vllm bench serve has (--goodput ttft:100
// tpot:50, --header a=1 b=2), nor print argparse's error messages, so the
// bench command parses its flags here. Like vLLM's FlexibleArgumentParser
// it accepts --flag value, --flag=value and underscores for dashes.

// A usageError is a command-line error that argparse would report with
// "usage: ..." and exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// nargs says how many values an option takes.
type nargs int

const (
	nargsOne  nargs = iota // exactly one value
	nargsZero              // a switch (store_true)
	nargsAny               // "*": zero or more values
	nargsMany              // "+": one or more values
)

// An option is one flag of an argParser.
type option struct {
	name    string // without the leading dashes
	help    string
	group   string
	metavar string
	def     string // shown in --help; "" shows nothing
	nargs   nargs
	choices []string
	set     func(vals []string) error
	get     func() any // the current value, nil for Python's None
	seen    bool
}

// An argParser holds the options of one subcommand.
type argParser struct {
	prog     string
	options  []*option
	byName   map[string]*option
	required []string
	// positionals, when set, receives the arguments that are not options;
	// otherwise they are unrecognized, as vllm bench serve has none.
	positionals *[]string
	// usageArgs follows "[options]" in the usage line.
	usageArgs string
}

func newArgParser(prog string) *argParser {
	return &argParser{prog: prog, byName: map[string]*option{}}
}

func (p *argParser) add(o *option) *option {
	if _, dup := p.byName[o.name]; dup {
		panic("argparse: duplicate option --" + o.name)
	}
	p.options = append(p.options, o)
	p.byName[o.name] = o
	return o
}

func (p *argParser) stringVar(dst *string, name, def, group, help string) *option {
	*dst = def
	return p.add(&option{name: name, help: help, group: group, def: def, set: func(v []string) error {
		*dst = v[0]
		return nil
	}, get: func() any { return *dst }})
}

// optStringVar is a string option whose default is None (nil).
func (p *argParser) optStringVar(dst **string, name, group, help string) *option {
	*dst = nil
	return p.add(&option{name: name, help: help, group: group, set: func(v []string) error {
		s := v[0]
		*dst = &s
		return nil
	}, get: none(dst)})
}

func (p *argParser) intVar(dst *int, name string, def int, group, help string) *option {
	*dst = def
	return p.add(&option{name: name, help: help, group: group, def: strconv.Itoa(def),
		set: convert(name, "int", parseInt, func(n int) { *dst = n }), get: func() any { return *dst }})
}

// optIntVar is an int option whose default is None (nil).
func (p *argParser) optIntVar(dst **int, name, group, help string) *option {
	*dst = nil
	return p.add(&option{name: name, help: help, group: group,
		set: convert(name, "int", parseInt, func(n int) { *dst = &n }), get: none(dst)})
}

func (p *argParser) floatVar(dst *float64, name string, def float64, group, help string) *option {
	*dst = def
	return p.add(&option{name: name, help: help, group: group, def: metrics.PyFloat(def),
		set: convert(name, "float", parseFloat, func(f float64) { *dst = f }), get: func() any { return *dst }})
}

// optFloatVar is a float option whose default is None (nil).
func (p *argParser) optFloatVar(dst **float64, name, group, help string) *option {
	*dst = nil
	return p.add(&option{name: name, help: help, group: group,
		set: convert(name, "float", parseFloat, func(f float64) { *dst = &f }), get: none(dst)})
}

// convert returns the set function of an option whose one value parse
// converts (argparse's type=int or type=float): a value it rejects is
// argparse's "invalid int value" error, anything else goes to store.
func convert[T any](name, typeName string, parse func(string) (T, error), store func(T)) func([]string) error {
	return func(v []string) error {
		x, err := parse(v[0])
		if err != nil {
			return usagef("argument --%s: invalid %s value: '%s'", name, typeName, v[0])
		}
		store(x)
		return nil
	}
}

// none returns the get function of an option whose default is None: the
// value, or nil while it is unset.
func none[T any](dst **T) func() any {
	return func() any {
		if *dst == nil {
			return nil
		}
		return **dst
	}
}

func (p *argParser) boolVar(dst *bool, name, group, help string) *option {
	*dst = false
	return p.add(&option{name: name, help: help, group: group, nargs: nargsZero, set: func([]string) error {
		*dst = true
		return nil
	}, get: func() any { return *dst }})
}

// listVar is a multi-valued option (nargs "*" or "+"); nil means not given.
func (p *argParser) listVar(dst *[]string, name string, n nargs, metavar, group, help string) *option {
	*dst = nil
	return p.add(&option{name: name, help: help, group: group, metavar: metavar, nargs: n, set: func(v []string) error {
		*dst = append([]string{}, v...)
		return nil
	}, get: func() any {
		if *dst == nil {
			return nil
		}
		return *dst
	}})
}

// jsonVar is an option whose value is a JSON object (argparse type=json.loads).
func (p *argParser) jsonVar(dst *map[string]any, name, group, help string) *option {
	*dst = nil
	return p.add(&option{name: name, help: help, group: group, set: func(v []string) error {
		var m map[string]any
		if err := json.Unmarshal([]byte(v[0]), &m); err != nil {
			return usagef("argument --%s: invalid loads value: '%s'", name, v[0])
		}
		*dst = m
		return nil
	}, get: func() any {
		if *dst == nil {
			return nil
		}
		return *dst
	}})
}

// parse reads args. It returns a *usageError for anything argparse would
// reject before the program runs.
func (p *argParser) parse(args []string) error {
	var unknown []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			unknown = append(unknown, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "--") || isNumber(arg) {
			if p.positionals != nil {
				*p.positionals = append(*p.positionals, arg)
				continue
			}
			unknown = append(unknown, arg)
			continue
		}
		name, inline, hasInline := strings.Cut(arg[2:], "=")
		o, err := p.lookup(strings.ReplaceAll(name, "_", "-"))
		if err != nil {
			return err
		}
		if o == nil {
			unknown = append(unknown, arg)
			continue
		}
		var vals []string
		switch {
		case o.nargs == nargsZero:
			if hasInline {
				return usagef("argument --%s: ignored explicit argument '%s'", o.name, inline)
			}
		case hasInline:
			vals = []string{inline}
		default:
			for i+1 < len(args) && !looksLikeOption(args[i+1]) {
				vals = append(vals, args[i+1])
				i++
				if o.nargs == nargsOne {
					break
				}
			}
		}
		switch {
		case o.nargs == nargsOne && len(vals) != 1:
			return usagef("argument --%s: expected one argument", o.name)
		case o.nargs == nargsMany && len(vals) == 0:
			return usagef("argument --%s: expected at least one argument", o.name)
		}
		if len(o.choices) > 0 {
			for _, v := range vals {
				if !slices.Contains(o.choices, v) {
					return usagef("argument --%s: invalid choice: '%s' (choose from %s)", o.name, v, quoteList(o.choices))
				}
			}
		}
		if err := o.set(vals); err != nil {
			return err
		}
		o.seen = true
	}
	if len(unknown) > 0 {
		return usagef("unrecognized arguments: %s", strings.Join(unknown, " "))
	}
	return nil
}

// lookup finds an option by name or, as argparse allows, by a prefix that
// only one option name starts with.
func (p *argParser) lookup(name string) (*option, error) {
	if o := p.byName[name]; o != nil {
		return o, nil
	}
	var matches []string
	for _, o := range p.options {
		if name != "" && strings.HasPrefix(o.name, name) {
			matches = append(matches, "--"+o.name)
		}
	}
	switch len(matches) {
	case 0:
		return nil, nil
	case 1:
		return p.byName[matches[0][2:]], nil
	}
	return nil, usagef("ambiguous option: --%s could match %s", name, strings.Join(matches, ", "))
}

// checkRequired reports the required options that were not given, as
// argparse does after parsing.
func (p *argParser) checkRequired() error {
	var missing []string
	for _, r := range p.required {
		if !p.byName[r].seen {
			missing = append(missing, "--"+r)
		}
	}
	if len(missing) > 0 {
		return usagef("the following arguments are required: %s", strings.Join(missing, ", "))
	}
	return nil
}

// values returns every option's value by its Python name (dashes as
// underscores), as vars(args) gives them in vLLM.
func (p *argParser) values() map[string]any {
	m := make(map[string]any, len(p.options))
	for _, o := range p.options {
		m[strings.ReplaceAll(o.name, "-", "_")] = o.get()
	}
	return m
}

// given reports whether the option was on the command line.
func (p *argParser) given(name string) bool { return p.byName[name].seen }

// writeHelp prints the options grouped as vLLM's --help groups them.
func (p *argParser) writeHelp(w io.Writer, summary string) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", strings.TrimSpace(p.prog+" [options] "+p.usageArgs), summary)
	var groups []string
	byGroup := map[string][]*option{}
	for _, o := range p.options {
		if _, ok := byGroup[o.group]; !ok {
			groups = append(groups, o.group)
		}
		byGroup[o.group] = append(byGroup[o.group], o)
	}
	for _, g := range groups {
		title := g
		if title == "" {
			title = "options"
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, o := range byGroup[g] {
			help := o.help
			if len(o.choices) > 0 {
				help += " {" + strings.Join(o.choices, ",") + "}"
			}
			if o.def != "" {
				help += " (default: " + o.def + ")"
			}
			if slices.Contains(p.required, o.name) {
				help += " (required)"
			}
			writeOptionHelp(w, "  --"+o.name+metavarFor(o), help)
		}
	}
}

// writeOptionHelp prints one option as argparse does: the flag, then its
// help wrapped at 80 columns from column 24.
func writeOptionHelp(w io.Writer, flag, help string) {
	const indent, width = 24, 80
	line := flag
	if len(flag) >= indent-1 {
		fmt.Fprintln(w, flag)
		line = ""
	}
	col := indent
	line += strings.Repeat(" ", indent-len(line))
	for _, word := range strings.Fields(help) {
		if col > indent && col+1+len(word) > width {
			fmt.Fprintln(w, line)
			line, col = strings.Repeat(" ", indent), indent
		}
		if col > indent {
			line += " "
			col++
		}
		line += word
		col += len(word)
	}
	fmt.Fprintln(w, line)
}

func metavarFor(o *option) string {
	switch o.nargs {
	case nargsZero:
		return ""
	case nargsAny:
		return " [" + o.metavar + " ...]"
	case nargsMany:
		return " " + o.metavar + " [" + o.metavar + " ...]"
	}
	if o.metavar != "" {
		return " " + o.metavar
	}
	return " " + strings.ToUpper(strings.ReplaceAll(o.name, "-", "_"))
}

func looksLikeOption(s string) bool {
	return strings.HasPrefix(s, "-") && len(s) > 1 && !isNumber(s)
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// parseInt parses like Python's int(): decimal, optional sign, underscores.
func parseInt(s string) (int, error) {
	return strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(s), "_", ""))
}

// parseFloat parses like Python's float(), which accepts inf and nan.
func parseFloat(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch strings.TrimLeft(t, "+-") {
	case "inf", "infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	return strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = "'" + s + "'"
	}
	return strings.Join(q, ", ")
}
