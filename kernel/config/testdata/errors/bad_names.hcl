model "open ai" "1local" {}
scorer "exact" "x" {}
task "t" "t" {}
eval "e" {
  task    = task.t.t
  models  = [model.x.y]
  scorers = ["exact", "exact", "not valid"]
}
