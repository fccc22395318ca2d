# Test helper, not part of servegate: see README.md (vllm_sharegpt_*.json).
# Runs vLLM's convert_sharegpt_to_openai.py (read from the seed directory,
# not copied) with stand-ins for pandas, tqdm and transformers, which only
# its statistics printing and optional tokenizer use.
import os, sys, types, importlib.util
pd = types.ModuleType("pandas")
class DF:
    def __init__(self, *a, **k): pass
    def describe(self, *a, **k): return self
    def transpose(self): return ""
pd.DataFrame = DF
tq = types.ModuleType("tqdm"); tq.tqdm = lambda x: x
class AutoTokenizer: pass
tf = types.ModuleType("transformers")
tf.AutoTokenizer = AutoTokenizer
sys.modules.update(pandas=pd, tqdm=tq, transformers=tf)
spec = importlib.util.spec_from_file_location("conv", os.environ.get("VLLM_CONVERT", "/work/shared/seed/multi_turn/convert_sharegpt_to_openai.py"))
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
inp, out, seed, max_items, min_turns, max_turns, min_len, max_len, keep_ascii = sys.argv[1:]
opt = lambda v: None if v == "-" else int(v)
if keep_ascii == "1":
    m.has_non_english_chars = lambda text: True
m.convert_sharegpt_to_openai(int(seed), inp, out, opt(max_items), opt(min_len), opt(max_len), opt(min_turns), opt(max_turns), None)
