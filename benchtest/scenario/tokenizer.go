package scenario

import (
	"strings"

	"github.com/servegate/servegate/tokenizer"
	"github.com/servegate/servegate/fixtures"
)

// tokenizerFixtures are the fixture names target.tokenizer may use.
var tokenizerFixtures = map[string]string{"llama3": fixtures.Llama3, "bert": fixtures.BERT}

// ResolveTokenizer resolves a target's tokenizer setting: a fixture name
// (llama3, bert), a tokenizer.json path or directory, or a model id in the
// local Hugging Face cache. Empty means the model's tokenizer when it is
// cached, else the Llama-3 fixture. It returns the resolved name and the
// source to load (a path or model id, for tokenizer.FromPretrained).
// Nothing is downloaded.
func ResolveTokenizer(name, model string) (resolved, source string, err error) {
	if name == "" {
		if model != "" && !strings.HasPrefix(model, "servegate/") {
			if _, err := (tokenizer.Hub{}).Locate(model); err == nil {
				return model, model, nil
			}
		}
		name = "llama3"
	}
	if f, ok := tokenizerFixtures[name]; ok {
		path, err := fixtures.TokenizerPath(f)
		return name, path, err
	}
	return name, name, nil
}
