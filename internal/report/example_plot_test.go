package report_test

import (
	"fmt"
	"os"
	"time"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
)

func ExampleWriteTermPlot() {
	tokensPerSecond := []float64{120, 480, 950, 1010, 990, 1020, 640, 80}
	// Eight points are drawn 20 columns wide (the narrowest plot).
	report.WriteTermPlot(os.Stdout, report.TermPlot{Title: "Output tokens per second", XLabel: "s", Width: 24, Height: 5}, tokensPerSecond)
	// Output:
	// Output tokens per second
	// 1020 ┤     ╭─────────╮
	//  765 ┤     │         ╰──╮
	//  510 ┤   ╭─╯            │
	//  255 ┤   │              │
	//    0 ┤───╯              ╰─
	//      └────────────────────
	//       0        3         7 s
}

func ExamplePerSecondSeries() {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	records := []metrics.Record{
		// Sent at 0 s, first token at 0.3 s, then one every 0.4 s until 1.5 s.
		{Success: true, Start: 0, TTFT: ms(300), ITL: []time.Duration{ms(400), ms(400), ms(400)}, Latency: ms(1500)},
		// Sent at 1.2 s, tokens at 1.4 s and 2.1 s. The run spans 2.1 s, so
		// there are ceil(2.1)+1 = 4 one-second buckets, as vLLM counts them.
		{Success: true, Start: ms(1200), TTFT: ms(200), ITL: []time.Duration{ms(700)}, Latency: ms(900)},
	}
	tokens, concurrent := report.PerSecondSeries(records)
	fmt.Println("tokens per second:", tokens)
	fmt.Println("concurrent requests:", concurrent)
	// Output:
	// tokens per second: [2 3 1 0]
	// concurrent requests: [1 2 1 0]
}
