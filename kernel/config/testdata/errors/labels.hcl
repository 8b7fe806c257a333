model "openai" {}
task "niah" "small" "extra" {}
plugin {}
eval "a" "b" {}
