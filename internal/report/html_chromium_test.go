package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromium runs headless Chromium on a local file with networking off and
// returns its stdout. The test is skipped when Chromium is not installed.
func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install -y chromium); ci/report-screenshot.sh needs it too")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	return out
}

// TestHTMLReportInChromium renders the report in a real browser: the DOM it
// builds holds every chart, and the screenshot is a drawn page.
func TestHTMLReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium; skipped with -short")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(page, []byte(renderHTML(t, sampleHTMLReport())), 0o644))
	url := "file://" + page

	dom := string(chromium(t, "--dump-dom", url))
	assert.Equal(t, 7, strings.Count(dom, "<svg "), "the browser parsed every chart")
	assert.Contains(t, dom, "Serving benchmark result")
	assert.Contains(t, dom, "Failures by kind")

	shot := filepath.Join(dir, "shot.png")
	chromium(t, "--screenshot="+shot, "--window-size=1280,1600", url)
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Equal(t, 1280, img.Bounds().Dx())
	colors := map[[3]uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 7 {
		for x := 0; x < img.Bounds().Dx(); x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
		}
	}
	assert.Greater(t, len(colors), 40, "a drawn page has text, charts and cards, not a blank")
	r, g, b, _ := img.At(10, 10).RGBA()
	assert.Less(t, r>>8+g>>8+b>>8, uint32(200), "the dark header band is at the top")
}
