package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// knobFlag is a flag.Value that remembers the text it was given, applied to
// Params after the profile and the environment.
type knobFlag struct {
	key string
	set *[][2]string
}

func (k knobFlag) String() string { return "" }
func (k knobFlag) Set(v string) error {
	var probe Params = DefaultParams()
	if err := probe.Set(k.key, v); err != nil {
		return err
	}
	*k.set = append(*k.set, [2]string{k.key, v})
	return nil
}

// Options are Main's settings besides the knobs.
type Options struct {
	// Profile is a shipped profile's name or a YAML path.
	Profile string
	// Tokenizer is a tokenizer.json path; empty uses the word tokenizer.
	Tokenizer string
	// Addr is the listen address (host:port).
	Addr string
	// PrintParams asks Main to print the resolved knobs and exit.
	PrintParams bool
}

// ParseArgs resolves the command line and the environment into the server's
// Params and Options, with precedence flags > environment > YAML profile >
// DefaultParams.
func ParseArgs(args []string, environ []string, stderr io.Writer) (Params, Options, error) {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	opts := Options{Profile: env[EnvPrefix+"PROFILE"], Tokenizer: env[EnvPrefix+"TOKENIZER"]}
	host, port := "0.0.0.0", "8000"
	if v := env[EnvPrefix+"HOST"]; v != "" {
		host = v
	}
	if v := env[EnvPrefix+"PORT"]; v != "" {
		port = v
	}
	fs := flag.NewFlagSet("servegate-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.Profile, "profile", opts.Profile, "profile name ("+strings.Join(Profiles(), ", ")+") or YAML file path (env "+EnvPrefix+"PROFILE)")
	fs.StringVar(&opts.Tokenizer, "tokenizer", opts.Tokenizer, "tokenizer.json path; empty uses an approximate word tokenizer (env "+EnvPrefix+"TOKENIZER)")
	fs.StringVar(&host, "host", host, "listen host (env "+EnvPrefix+"HOST)")
	fs.StringVar(&port, "port", port, "listen port (env "+EnvPrefix+"PORT)")
	printParams := fs.Bool("print-params", false, "print the resolved knobs as YAML and exit")
	var sets [][2]string
	def := DefaultParams()
	for _, key := range Knobs() {
		d, _ := def.Get(key)
		if m, ok := MaxOf(key); ok {
			d += ", at most " + m
		}
		fs.Var(knobFlag{key, &sets}, strings.ReplaceAll(key, "_", "-"),
			fmt.Sprintf("%s (YAML %s, env %s%s, default %s)", Help(key), key, EnvPrefix, strings.ToUpper(key), d))
	}
	if err := fs.Parse(args); err != nil {
		return Params{}, opts, err
	}
	if fs.NArg() > 0 {
		return Params{}, opts, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	opts.Addr = net.JoinHostPort(host, port)
	p, err := LoadProfile(opts.Profile)
	if err != nil {
		return p, opts, err
	}
	if err := p.ApplyEnv(environ); err != nil {
		return p, opts, err
	}
	for _, kv := range sets {
		if err := p.Set(kv[0], kv[1]); err != nil {
			return p, opts, fmt.Errorf("flag --%s: %w", strings.ReplaceAll(kv[0], "_", "-"), err)
		}
	}
	opts.PrintParams = *printParams
	return p, opts, p.Validate()
}

// Main runs the simulator as a command: it parses flags (see ParseArgs),
// serves until ctx is done, and returns the exit status (0 ok, 2 bad
// arguments, 1 other errors).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	p, opts, err := ParseArgs(args, os.Environ(), stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "servegate sim: %v\n", err)
		return 2
	}
	if opts.PrintParams {
		out, _ := yaml.Marshal(p)
		stdout.Write(out)
		return 0
	}
	cfg := Config{Params: &p}
	if opts.Tokenizer != "" {
		tk, closeTk, err := loadTokenizer(opts.Tokenizer)
		if err != nil {
			fmt.Fprintf(stderr, "servegate sim: %v\n", err)
			return 2
		}
		defer closeTk()
		cfg.Tokenizer = tk
	}
	srv, err := New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "servegate sim: %v\n", err)
		return 1
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "servegate sim: %v\n", err)
		return 1
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second, ConnContext: ConnContext}
	fmt.Fprintf(stdout, "servegate sim: serving %s (profile %q, max_num_seqs %d, slowdown %g) on http://%s\n",
		p.Model, opts.Profile, p.MaxNumSeqs, p.Slowdown, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(StampListener(ln)) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		return 0
	case err := <-errc:
		fmt.Fprintf(stderr, "servegate sim: %v\n", err)
		return 1
	}
}
