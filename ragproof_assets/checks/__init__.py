"""Asset checks on evaluation runs."""
