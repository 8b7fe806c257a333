store = "x.db"
