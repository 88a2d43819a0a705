"""What users watch leasehold with: Grafana dashboards and Prometheus alerts, generated
from code so that every query is tested against a real Prometheus (DESIGN §6)."""
