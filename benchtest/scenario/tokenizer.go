package scenario

import (
	"strings"

	"github.com/servegate/servegate/internal/tokenizer"
)

// ResolveTokenizer resolves a target's tokenizer setting to the name
// tokenizer.Load takes: a bundled name (llama3, bert), a tokenizer.json path
// or directory, or a model id in the local Hugging Face cache. Empty means
// the model's tokenizer when it is cached, else the bundled Llama-3
// tokenizer. Nothing is downloaded.
func ResolveTokenizer(name, model string) string {
	if name != "" {
		return name
	}
	if model != "" && !strings.HasPrefix(model, "servegate/") {
		if _, err := (tokenizer.Hub{}).Locate(model); err == nil {
			return model
		}
	}
	return tokenizer.Llama3
}
