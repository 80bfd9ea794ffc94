# live/cloud/apps: a zone from a catalog unit outside the repository
unit "public" {
  source = "/opt/catalog/units/zone"
  path   = "public"
  values = {
    zone = "apps.example.net"
  }
}
