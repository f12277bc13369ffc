"""Set up the cluster in a box for a test: `kubectl` and `aws` on PATH, moto's SageMaker server.

moto 5 answers CreateTrainingJob with a job that is Completed at once, drops the
body's Environment (which DescribeTrainingJob returns, and by which poolc knows its
steps) and has no StopTrainingJob; the box makes a created job InProgress (it runs
until the test finishes it), keeps its Environment, and adds StopTrainingJob
(InProgress -> Stopped), inside moto's own server, so the `aws` stand-in talks to it
over HTTP like the real CLI.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from cluster import Cluster

HERE = Path(__file__).resolve().parent


def _patch_moto() -> None:
    from moto.sagemaker import models, responses

    if getattr(models.SageMakerModelBackend, "_box_patched", False):
        return
    create = models.SageMakerModelBackend.create_training_job

    def create_running(self, *args, **kwargs):   # type: ignore[no-untyped-def]
        job = create(self, *args, **kwargs)
        job.training_job_status = job.secondary_status = "InProgress"
        job.training_end_time = None
        return job

    respond = responses.SageMakerResponse.create_training_job

    def create_with_environment(self):   # type: ignore[no-untyped-def]
        answer = respond(self)
        job = self.sagemaker_backend.training_jobs[self._get_param("TrainingJobName")]
        if self._get_param("Environment"):
            job.environment = self._get_param("Environment")   # described back as Environment
        return answer

    def stop_training_job(self):   # type: ignore[no-untyped-def]
        name = self._get_param("TrainingJobName")
        job = self.sagemaker_backend.training_jobs.get(name)
        if job is None:
            from moto.sagemaker.exceptions import ValidationError
            raise ValidationError(message=f"Requested resource not found: {name}")
        if job.training_job_status == "InProgress":
            job.training_job_status = job.secondary_status = "Stopped"
            job.last_modified_time = job.training_end_time = models.utcnow()
        return "{}"

    models.SageMakerModelBackend.create_training_job = create_running
    responses.SageMakerResponse.stop_training_job = stop_training_job
    responses.SageMakerResponse.create_training_job = create_with_environment
    models.SageMakerModelBackend._box_patched = True


class Box:
    """One cluster, one moto server, and the environment a cycle runs in."""

    def __init__(self, root: Path, seed: int = 0, clock: int = 1_800_000_000):
        from moto.server import ThreadedMotoServer

        _patch_moto()
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        for tool in ("kubectl", "aws"):
            script = self.bin / tool
            script.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / (tool + '.py')} \"$@\"\n")
            script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        cluster = Cluster(root / "cluster.json")
        cluster.seed, cluster.clock = seed, clock
        cluster.save()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.moto = f"http://{host}:{port}"
        self._reset()

    def _reset(self) -> None:
        """moto's backends live in this process: no bucket or training job of another test."""
        import urllib.request

        urllib.request.urlopen(urllib.request.Request(f"{self.moto}/moto-api/reset", method="POST")).read()

    def stop(self) -> None:
        self._reset()
        self.server.stop()

    def env(self, now: int) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}", "CLUSTERBOX": str(self.root),
                "CLUSTERBOX_MOTO": self.moto, "PYTHONPATH": str(HERE), "SOURCE_DATE_EPOCH": str(now),
                "AWS_ACCESS_KEY_ID": "box", "AWS_SECRET_ACCESS_KEY": "box"}

    def cluster(self) -> Cluster:
        return Cluster(self.root / "cluster.json")

    def training_jobs(self) -> list:
        import moto.sagemaker.models as models
        return [job for backend in models.sagemaker_backends.values() for region in backend.values()
                for job in region.training_jobs.values()]

    def finish_training_job(self, name: str) -> None:
        import moto.sagemaker.models as models
        for job in self.training_jobs():
            if job.training_job_name == name:
                assert job.training_job_status == "InProgress", name
                job.training_job_status = job.secondary_status = "Completed"
                job.last_modified_time = job.training_end_time = models.utcnow()
                return
        raise KeyError(name)

    def dump(self) -> str:
        return json.dumps(json.loads((self.root / "cluster.json").read_text())["log"][-40:], indent=1)
