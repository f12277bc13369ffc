"""The `aws` of the cluster in a box: SageMaker calls answered by moto's server (``$CLUSTERBOX_MOTO``).

    aws sagemaker list-training-jobs --region R --output json      (every page, as the CLI does)
    aws sagemaker describe-training-job --region R --training-job-name N --output json
    aws sagemaker create-training-job --region R --cli-input-json file://BODY
    aws sagemaker stop-training-job --region R --training-job-name N
    aws sagemaker add-tags --region R --resource-arn ARN --tags Key=K,Value=V
    aws sagemaker list-tags --region R --resource-arn ARN --output json
    aws s3 cp SOURCE DESTINATION              (one object, either way: where the docs keep the state)

Each is one boto3 call (paginated for the list) against moto; output is JSON with
timestamps as ISO 8601 strings, and a service error is printed as the AWS CLI prints
it, exit 254. Anything else exits 2 with "stand-in: not modelled".
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from typing import Any

import boto3
from botocore.exceptions import ClientError


def _args(argv: list[str]) -> dict[str, str]:
    found = {}
    for i in range(0, len(argv), 2):
        if not argv[i].startswith("--") or i + 1 >= len(argv):
            raise ValueError(argv[i])
        found[argv[i][2:]] = argv[i + 1]
    return found


def _print(data: Any) -> None:
    data.pop("ResponseMetadata", None)
    print(json.dumps(data, indent=2, default=lambda x: x.isoformat() if isinstance(x, datetime) else str(x)))


def _s3_cp(source: str, destination: str) -> int:
    from botocore.config import Config

    client = boto3.client("s3", region_name="us-east-1", endpoint_url=os.environ["CLUSTERBOX_MOTO"],
                          aws_access_key_id="box", aws_secret_access_key="box",
                          config=Config(s3={"addressing_style": "path"}))
    try:
        if source.startswith("s3://") and not destination.startswith("s3://"):
            bucket, _, key = source[5:].partition("/")
            client.download_file(bucket, key, destination)
            print(f"download: {source} to {destination}")
        elif destination.startswith("s3://") and not source.startswith("s3://"):
            bucket, _, key = destination[5:].partition("/")
            client.upload_file(source, bucket, key)
            print(f"upload: {source} to {destination}")
        else:
            return _unknown(["s3", "cp", source, destination])
    except ClientError as exc:
        print(f"fatal error: An error occurred ({exc.response.get('Error', {}).get('Code')}) when calling the "
              f"{exc.operation_name} operation: {exc.response.get('Error', {}).get('Message')}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if argv[:2] == ["s3", "cp"] and len(argv) == 4:
        return _s3_cp(argv[2], argv[3])
    if argv[:1] != ["sagemaker"] or len(argv) < 2:
        return _unknown(argv)
    try:
        args = _args(argv[2:])
    except ValueError:
        return _unknown(argv)
    region = args.pop("region", None)
    args.pop("output", None)
    client = boto3.client("sagemaker", region_name=region, endpoint_url=os.environ["CLUSTERBOX_MOTO"],
                          aws_access_key_id="box", aws_secret_access_key="box")
    operation = argv[1]
    try:
        if operation == "list-training-jobs" and not args:
            summaries: list[dict] = []
            for page in client.get_paginator("list_training_jobs").paginate():
                summaries += page["TrainingJobSummaries"]
            _print({"TrainingJobSummaries": summaries})
        elif operation == "describe-training-job" and set(args) == {"training-job-name"}:
            _print(client.describe_training_job(TrainingJobName=args["training-job-name"]))
        elif operation == "stop-training-job" and set(args) == {"training-job-name"}:
            client.stop_training_job(TrainingJobName=args["training-job-name"])
        elif operation == "add-tags" and set(args) == {"resource-arn", "tags"}:
            fields = dict(part.split("=", 1) for part in args["tags"].split(","))
            client.add_tags(ResourceArn=args["resource-arn"], Tags=[{"Key": fields["Key"], "Value": fields["Value"]}])
        elif operation == "list-tags" and set(args) == {"resource-arn"}:
            _print(client.list_tags(ResourceArn=args["resource-arn"]))
        elif operation == "create-training-job" and set(args) == {"cli-input-json"}:
            body = json.loads(open(args["cli-input-json"].removeprefix("file://"), encoding="utf-8").read())
            _print(client.create_training_job(**body))
        else:
            return _unknown(argv)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        print(f"An error occurred ({error.get('Code')}) when calling the {exc.operation_name} operation: "
              f"{error.get('Message')}", file=sys.stderr)
        return 254
    return 0


def _unknown(argv: list[str]) -> int:
    print(f"stand-in: not modelled: aws {' '.join(argv)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
