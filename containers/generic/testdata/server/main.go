// Command server is the generic target's test server: /health, /env
// (SERVEGATE_BACKENDS) and /check (each backend's /health from inside the
// network). "crash" as its argument makes it exit at once.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
)

func main() {
	port := flag.Int("port", 8080, "listen port")
	flag.Parse()
	if flag.Arg(0) == "crash" {
		fmt.Fprintln(os.Stderr, "boom: crashing on purpose")
		os.Exit(3)
	}
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	http.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, os.Getenv("SERVEGATE_BACKENDS"), " ", os.Getenv("GREETING"))
	})
	http.HandleFunc("/check", func(w http.ResponseWriter, r *http.Request) {
		var out []string
		for _, u := range strings.Split(os.Getenv("SERVEGATE_BACKENDS"), ",") {
			resp, err := http.Get(u + "/health")
			if err != nil {
				out = append(out, u+" "+err.Error())
				continue
			}
			resp.Body.Close()
			out = append(out, fmt.Sprintf("%s %d", u, resp.StatusCode))
		}
		fmt.Fprint(w, strings.Join(out, ","))
	})
	fmt.Printf("listening on :%d\n", *port)
	if err := http.ListenAndServe(fmt.Sprintf(":%d", *port), nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
