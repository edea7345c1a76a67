"""Defaulting (upstream's SetDefaults_*) of the kinds served since issue 11, one module per group."""
