# The quickstart: needle-in-a-haystack with the extractive baseline model.
# Runs end to end with no network and no model server:
#
#   hayloft run examples/quickstart.hcl
#
# The haystack defaults to the public-domain text that ships with Go
# ($(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt); point HAYSTACK at
# any long UTF-8 text file to use another.

task "niah" "opticks" {
  haystack = env_or("HAYSTACK", "${goroot()}/src/testdata/Isaac.Newton-Opticks.txt")
  # 8 context lengths × 5 depths = 40 samples.
  lengths  = [1000, 2000, 4000, 8000, 12000, 16000, 24000, 32000]
  depths   = [0, 25, 50, 75, 100]
}

# Answers with the context sentence that best matches the question (BM25):
# a real, deterministic baseline that needs no GPU.
model "baseline" "extractive" {
  mode = "extractive"
}

eval "needle" {
  task    = task.niah.opticks
  models  = [model.baseline.extractive]
  scorers = ["niah", "contains"]
}
