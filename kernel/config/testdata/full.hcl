# top-level kernel settings (all optional)
store      = ".hayloft/hayloft.db"
log_level  = "debug"
plugin_dir = "./plugins"

plugin "acme" {
  source = "./bin/acme-plugin"
  sha256 = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"
}

model "openai" "local" {
  plugin          = "acme"
  base_url        = "http://127.0.0.1:8000/v1"
  model           = "meta-llama/Llama-3.1-8B-Instruct"
  api_key_env     = "OPENAI_API_KEY"
  max_concurrency = 64
  context_window  = 131072
  temperature     = 0
  top_p           = 0.95
  max_tokens      = 256
  stop            = ["</s>", "\n\n"]
  seed            = 42
  truncation      = "left"
  headers         = { "X-Run" = "hayloft <test>", retries = 3 }
}

model "baseline" "random" {}

task "niah" "small" {
  haystack = "${file_dir()}/data/x.txt"
  lengths  = range(1000, 16001, 5000)
  depths   = [0, 50, 100]
  ratio    = 0.25
  big      = 9007199254740993
  language = upper(env("LANG_CODE"))
  unset    = null
}

retriever "bm25" "default" { top_k = 5 }

scorer "rougel" "zh" { tokenizer = "char" }

eval "needles" {
  task       = task.niah.small
  models     = [model.openai.local, model.baseline.random]
  retrievers = [null, retriever.bm25.default]   # null = no retriever (full context)
  scorers    = ["contains", scorer.rougel.zh]   # a bare string = that scorer with default options
  limit      = 100
  order      = "task"                           # send samples strictly in task order
}

eval "quick" {
  task    = task.niah.small
  models  = [model.baseline.random]
  scorers = ["contains"]
}
