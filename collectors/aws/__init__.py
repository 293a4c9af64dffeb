"""Amazon Web Services: A100 prices for EC2 p4d.24xlarge (8 x A100 40GB) and p4de.24xlarge (8 x A100 80GB).

- `bulk`: on-demand and standard No Upfront reserved (1yr, 3yr) from the Price List bulk CSV per region,
  https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv (no key);
- `spot`: spot from EC2 DescribeSpotPriceHistory, https://ec2.{region}.amazonaws.com/ (SigV4, needs AWS
  credentials; without them spot is reported as not covered and the list prices are still collected);
- `collector`: `AwsCollector`, scopes `list` (daily) and `spot` (hourly), regions from
  `GPUPRICE_AWS_REGIONS`, every URL rewritable with `GPUPRICE_AWS_BASE_URL`.

Billing: Linux instances are billed per second with a 60-second minimum.
"""

from collectors.aws.collector import AwsCollector

__all__ = ["AwsCollector"]
