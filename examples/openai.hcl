# Needle-in-a-haystack against a local OpenAI-compatible server: vLLM,
# llama.cpp llama-server, Ollama (base_url http://127.0.0.1:11434/v1), SGLang, TGI.
#
#   vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8000
#   hayloft run examples/openai.hcl
#
# BASE_URL and MODEL override the defaults below.

model "openai" "local" {
  base_url        = env_or("BASE_URL", "http://127.0.0.1:8000/v1")
  model           = env_or("MODEL", "meta-llama/Llama-3.1-8B-Instruct")
  # A hosted API needs a key: name the variable that holds it, never the key.
  # api_key_env   = "OPENAI_API_KEY"
  context_window  = 32768
  max_tokens      = 64
  temperature     = 0
  max_concurrency = 32
}

task "niah" "opticks" {
  haystack = env_or("HAYSTACK", "${goroot()}/src/testdata/Isaac.Newton-Opticks.txt")
  lengths  = [1000, 4000, 8000, 16000, 30000]
  depths   = [0, 25, 50, 75, 100]
}

eval "needle" {
  task    = task.niah.opticks
  models  = [model.openai.local]
  scorers = ["niah", "contains"]
}
