"""The Job controller. Upstream: pkg/controller/job"""
from .job_controller import JobController, JobControllerOptions

__all__ = ["JobController", "JobControllerOptions"]
