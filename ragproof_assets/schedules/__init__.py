"""What launches evaluation runs by itself: a schedule per suite, and a suite's runs
after its deps are materialized."""
